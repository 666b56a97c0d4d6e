"""The review queue (``ee curate``): candidates ee, agents and sessions propose, and a person's decisions.

:mod:`ee.curate.model` is the data (the contract with :mod:`ee.sessions`); the queue and the scans sit above
the store. Nothing is imported here: importing ``ee.curate.model`` stays cheap.
"""
