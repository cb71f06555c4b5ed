"""Repository-level pytest settings.

The plugin itself is loaded through its ``pytest11`` entry point once the
package is installed (see README); this file only keeps pytest out of folders
that hold no tests.
"""

collect_ignore = ["reports", ".venv", "build"]
