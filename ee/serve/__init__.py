"""The per-user warm server: where it listens and whom it answers (``protocol``), the client every
command asks (``client``), the server answering library operations for every workspace of its user
(``server``), and the watcher keeping each open workspace's index current (``watch``)."""
