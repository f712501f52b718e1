// Package testserver implements a scriptable MCP server speaking JSON-RPC 2.0
// over stdio (one JSON message per line). snodo's tests run it as a real child
// process (see test/cmd/testserver) to exercise the client against correct
// behaviour and against scripted misbehaviour.
//
// The names below are a contract that other packages' tests rely on; keep them
// stable.
//
// # Process behaviour
//
// Requests are handled concurrently, each in its own goroutine (except the
// -fast echo path and test/closeStdin, test/stopReading and test/pauseReading, which run on the
// reading goroutine). Notifications and responses are handled in arrival
// order on the reading goroutine. Every stdout line is written under one
// mutex. At stdin EOF the server waits up to 5 s for in-flight requests
// (open subscriptions do not count) and exits 0.
//
// # Flags
//
//	-era modern|legacy|both   handshakes answered (default both)
//	-discover-version V       the one modern version supported (default 2026-07-28)
//	-exit-on-discover         exit 1 when server/discover arrives (in any era)
//	-state-file PATH          with -exit-on-discover: the first run creates PATH
//	                          before exiting; if PATH exists, act as -era legacy
//	-silent-discover          never answer server/discover
//	-discover-delay D         answer server/discover only after D (a server
//	                          slow to start); no answer if it is cancelled first
//	-silent-listen            take subscriptions/listen and never acknowledge
//	                          or answer it
//	-close-stdout-on-discover close stdout when server/discover arrives, and live on
//	-endless-pages fresh|repeat  every list method answers no items and a nextCursor:
//	                          a new one on each page, or always the same
//	-empty-lists              every list method answers one page with no items
//	-discover-error CODE      answer server/discover with error CODE (any era)
//	-discover-junk            answer server/discover with {"hello":"world"}, a
//	                          result that is no DiscoverResult (any era)
//	-initialize-version V     answer initialize with version V, whatever was asked
//	-ignore-eof               keep running after stdin EOF
//	-ignore-sigterm           ignore SIGTERM for the whole life of the process
//	-grandchild               spawn "sleep 3600" (same process group) and print
//	                          "grandchild-pid=N" on stderr
//	-grandchild-stdio         give the grandchild the server's stdout/stderr
//	                          (default: /dev/null)
//	-stderr-lines N           print "stderr line 1".."stderr line N" on stderr at start
//	-fast                     answer test/echo inline with a zero-allocation scan
//	-eof-grace D              wait at most D for in-flight requests at stdin EOF (default 5s)
//	-start-file PATH          number each start: claim the first free PATH.K
//	                          (K = 1, 2, …, O_EXCL) and write the pid in it
//	-tasks                    offer tasks: the research tool (listed, taskSupport
//	                          "required") and tasks/*, legacy (2025-11-25 core) and
//	                          modern (the io.modelcontextprotocol/tasks extension);
//	                          see tasks.go
//	-refuse-after N           with -start-file: starts numbered above N answer
//	                          server/discover and initialize with error -32603
//
// # Eras
//
// A request is "modern" when the era is modern, or when the era is both and
// params._meta carries io.modelcontextprotocol/protocolVersion. Modern
// requests whose protocol version differs from -discover-version get error
// -32022 with data {"supported":[V],"requested":…}. Results of non-test/
// methods to modern requests carry "resultType":"complete".
//
//	server/discover           modern only (legacy era: -32601). No _meta or no
//	                          protocolVersion: -32601; no clientCapabilities: -32602.
//	                          Result: supportedVersions, capabilities, instructions,
//	                          serverInfo (top level and in _meta), ttlMs, cacheScope.
//	initialize                legacy only (modern era: -32601).
//	subscriptions/listen      modern only; see below.
//	ping, logging/setLevel    {} ; -32601 for modern requests.
//	resources/subscribe, resources/unsubscribe {uri}   legacy only, answer {}
//	                          (subscribe to test://refuse/…: -32602; with
//	                          -updated-on-subscribe, subscribe sends the URI's
//	                          notifications/resources/updated before its answer);
//	                          they keep the set of URIs test/touch notifies about.
//
// # MCP surface
//
//	tools/list                page size 2 with nextCursor; tools echo, add, fail, slow, ask
//	tools/call                echo {message}; add {a,b} → structuredContent {sum};
//	                          fail → isError; slow {ms} (progress every 10 ms, honours
//	                          cancellation); ask {rounds} (MRTR in modern requests,
//	                          a real elicitation/create request in legacy ones);
//	                          input {method,params,rounds} (not listed): asks the client
//	                          method (default roots/list) rounds times (MRTR or real
//	                          requests); text = the root URIs, or the raw answer;
//	                          url {id} (not listed): the first call with an id answers
//	                          -32042 (a URL elicitation), the next "through <id>"
//	                          Not listed, for sandbox tests (sandbox.go); a limit met
//	                          inside the server is a tool error with what was achieved:
//	                          alloc {mb} allocates mb MiB, touches and keeps it;
//	                          spin {ms} burns every core for ms (0: until cancelled);
//	                          fork {n} starts n "sleep 60" at once, then kills them:
//	                          "started K of N[: error]"; openfiles {n} opens the null
//	                          device n times at once: "opened K of N[: error]";
//	                          read {path} → its content; write {path,text};
//	                          connect {address} → "connected to ADDRESS" (TCP, 5 s)
//	resources/list            test://a, test://b
//	resources/templates/list  test://items/{id}
//	resources/read            unknown uri: -32002 (legacy) / -32602 (modern), with data
//	                          {"uri"} except for test://bare/… URIs
//	prompts/list, prompts/get greet {name} → user message "Hello, <name>!"
//	completion/complete       values ["alpha","beta"] filtered by argument.value prefix
//
// # Scripted methods
//
//	test/echo {any}                       result = params bytes as received
//	test/sleep {ms,honorCancel}           {"slept":ms}
//	test/progress {count,intervalMs,message,noProgressToken,honorCancel,stepMethod}  {"done":count}
//	                                      with stepMethod, progress k+1 waits for the client's k-th
//	                                      notification stepMethod instead of intervalMs; one with
//	                                      params {"done":true} ends it ({"done":k})
//	test/crash {code|signal,stderr,stderrBytes}  write stderr (text) and stderrBytes
//	                                      (base64, written raw) on stderr, each with a
//	                                      newline, then exit/raise signal without answering
//	test/closeStdin                       {} then close stdin; exit 0 after 30 s
//	test/closeStdout                      close stdout without answering
//	test/overlong {bytes,crlf}            one response line of that many bytes, then "\n"
//	                                      (with crlf: "\r\n", not counted in bytes)
//	test/garbage                          junk lines, then {"ok":true}
//	test/junk {count,line}                line (default "junk") count times, at once, then {"sent":count}
//	test/split {parts,delayMs}            {"ok":true} written in parts
//	test/rawAnswer {line}                 writes line as the answer, "$ID" replaced by the request id
//	test/duplicate                        {"n":1} twice, then {"n":2}, same id
//	test/stderr {lines,bytesPerLine}      {"lines":N}
//	test/stopReading                      {} then never read again; exit 0 after 60 s
//	test/floodRequests {count,method,pauseMs}  on the reading goroutine: count requests
//	                                      to the client (default ping), then read nothing for
//	                                      pauseMs (default 3000); never answered
//	test/pauseReading {ms}                {} then read nothing for ms, then carry on
//	test/orphanExit {code}                start "sleep 3600" holding stdout and stderr,
//	                                      print "grandchild-pid=N" on stderr, exit code
//	test/flood {count,method}             N notifications {"i":k}; {"sent":N}
//	test/notify {method,params}           one notification; {}
//	test/touch {uri}                      notifications/resources/updated {uri} when uri
//	                                      is subscribed (legacy); {"notified":bool}
//	test/error {code,message,data}        that error
//	test/env {name}                       {"value":…,"set":bool}
//	test/cwd                              {"dir":…}
//	test/pid                              {"pid":N}
//	test/received {method?}               {"messages":[{"method","params"}…]}
//	test/waitNotification {method,count,timeoutMs}   like test/received; -32001 on timeout
//	test/requests {method?}               {"requests":[{"method","id","params"}…]}
//	test/exit {code,afterMs}              {} then exit
//	test/serverRequest {method,params,count,concurrent,timeoutMs,cancelAfterMs,rawRequest}
//	                                      {"responses":[raw response|null|{"cancelled":true,"late":…}]}
//	test/emit {method,params,count,subscription,force,rawSubscriptionId}   {"sent":N}
//	test/endSubscription {subscription,mode:"graceful"|"teardown"}         {}
//	test/subscriptions                    {"open":[ids]}
//
// Server-to-client request ids are strings "s1", "s2", … unique for the
// life of the process. Every method not listed answers -32601.
package testserver
