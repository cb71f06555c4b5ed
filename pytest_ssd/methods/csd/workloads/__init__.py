"""The consumer method's fio jobs: its flow (:mod:`.flow`), quick profiles, sync writes and
QD1 latency (:mod:`.profiles`), fill drive and speed profile (:mod:`.fill`), low QD (:mod:`.lowqd`).
"""
