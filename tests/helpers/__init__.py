"""What the tests of several servers share: files in tmp_path, loopback ports and servers, tool calls
through an MCP client, a manual clock, mail messages, workbooks, the shared corpora, and the processes
the e2e tests start. Fixtures stay in the conftest files; the functions and classes they use live here,
so a test module imports them from one place and never from a conftest."""
