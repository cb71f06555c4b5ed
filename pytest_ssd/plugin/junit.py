"""The ``--junitxml`` file's properties, rewritten before pytest writes it.

pytest's junitxml copies every ``user_properties`` pair of a test into its
``<testcase>``; pytest-ssd's records (JSON, for the controller) ride there too.
Just before the file is written, each test's properties become what
:mod:`pytest_ssd.results.junit` keeps, in the layout the ini option chose.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Generator

import pytest
from _pytest.junitxml import LogXML, xml_key

from pytest_ssd.plugin.drives import suite_properties
from pytest_ssd.results import junit
from pytest_ssd.session import SsdSession


def check_layout(config: pytest.Config) -> str:
    """The ini option's layout; a UsageError naming the choices for any other word."""
    layout = str(config.getini(junit.INI_LAYOUT) or junit.LAYOUTS[0])
    if layout not in junit.LAYOUTS:
        raise pytest.UsageError(
            f"{junit.INI_LAYOUT} = {layout}: not a layout (one of: {', '.join(junit.LAYOUTS)})"
        )
    return layout


class JunitProperties:
    """Registered on the controller when ``--junitxml`` is given."""

    def __init__(self, layout: str, session: SsdSession) -> None:
        self.layout = layout
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        # a wrapper's first half runs before junitxml's own hook writes the file
        xml = session.config.stash.get(xml_key, None)
        if xml is not None:
            # the run and its drives, which a CI shows with the suite
            for name, value in suite_properties(self.session):
                xml.add_global_property(name, value)
            self._rewrite(xml)
        return (yield)

    def _rewrite(self, xml: LogXML) -> None:
        for reporter in xml.node_reporters_ordered:
            if hasattr(reporter, "properties"):  # still open: a test the run left unfinished
                reporter.properties = self._kept(reporter.attrs, reporter.properties, xml)
                continue
            case = reporter.to_xml()  # a finished test's element, as the file will hold it
            node = case.find("properties")
            if node is None:
                continue
            case.remove(node)
            pairs = [(p.get("name", ""), p.get("value", "")) for p in node]
            kept = self._kept(case.attrib, pairs, xml)
            if kept:
                node = ET.Element("properties")
                node.extend(ET.Element("property", name=k, value=v) for k, v in kept)
                case.insert(0, node)

    def _kept(
        self, attrs: dict[str, str], pairs: list[tuple[str, str]], xml: LogXML
    ) -> list[tuple[str, str]]:
        """What the testcase keeps; under the strict layout its properties go to the suite."""
        kept = junit.properties(pairs)
        if self.layout != "strict":
            return kept
        test = (attrs.get("classname", ""), attrs.get("name", ""))
        xml.global_properties.extend((junit.suite_name(*test, k), v) for k, v in kept)
        return []
