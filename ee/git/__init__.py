"""Everything git: the one runner, the repository, history, the memory branch, the merge driver
and team sync."""
