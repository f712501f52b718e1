#!/bin/sh
# Stands in for npx/uvx-style launchers: it runs the real server ("$@") as
# its child and waits for it, instead of exec'ing it, so the server is a
# grandchild of the client and the launcher stays in between.
"$@"
exit $?
