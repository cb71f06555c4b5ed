"""The consumer method's graphs: fill drive and speed profile (:mod:`.fill`), low QD
(:mod:`.lowqd`), CrystalDiskMark-like grids and MiB/s bars (:mod:`.grid`).
"""
