"""The warm server: ``ee watch`` (watcher and server), the client every command starts in, the
sentinel that lets the server answer from the view it holds, and how a short-lived process ends."""
