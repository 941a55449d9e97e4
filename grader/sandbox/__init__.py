"""Where submission code runs: the worker process, its isolation, the buffers it shares with the
trusted parent, the messages between them and the watch kept on it from outside."""
