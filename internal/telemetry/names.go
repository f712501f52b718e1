package telemetry

// Names from the OpenTelemetry semantic conventions for the Model Context
// Protocol (status: development), as published in the GenAI semantic
// conventions (the MCP page: its client and server spans, the
// operation and session duration metrics, and the rules for error.type
// and rpc.response.status_code on each side, as they stood in late 2026)
// and the general registry (error.type, network.transport,
// network.io.direction, jsonrpc.*, rpc.response.status_code). The OpenTelemetry Go API snodo builds on
// (v1.21) has no semconv package with MCP names, so the few used are
// written here, in one place.
const (
	AttrMethodName       = "mcp.method.name"
	AttrProtocolVersion  = "mcp.protocol.version"
	AttrResourceURI      = "mcp.resource.uri"
	AttrToolName         = "gen_ai.tool.name"
	AttrPromptName       = "gen_ai.prompt.name"
	AttrOperationName    = "gen_ai.operation.name"
	AttrRequestID        = "jsonrpc.request.id"
	AttrRPCStatusCode    = "rpc.response.status_code"
	AttrErrorType        = "error.type"
	AttrNetworkTransport = "network.transport"
	AttrIODirection      = "network.io.direction"

	MetricOperationDuration       = "mcp.client.operation.duration"
	MetricSessionDuration         = "mcp.client.session.duration"
	MetricServerOperationDuration = "mcp.server.operation.duration" // the client's side of a request the server sent

	TransportPipe       = "pipe"         // network.transport of stdio
	TransportTCP        = "tcp"          // network.transport of a server reached over the network (NATS)
	TransportOther      = "other"        // network.transport of a caller's own Transport (in-memory, …)
	OperationExecute    = "execute_tool" // gen_ai.operation.name of tools/call
	ErrorTypeToolError  = "tool_error"   // error.type of a result with isError set
	ErrorTypeOther      = "_OTHER"       // error.type when nothing more precise applies; mcp.method.name of an unknown server request in metrics
	DirectionTransmit   = "transmit"
	DirectionReceive    = "receive"
	HeaderTraceparent   = "traceparent"
	HeaderTracestate    = "tracestate"
	methodToolsCall     = "tools/call"
	methodPromptsGet    = "prompts/get"
	methodResourcesRead = "resources/read"
)

// snodo's own names, for what the conventions do not cover. Attributes
// stay low-cardinality: the server command's base name, the method, a
// cause from a short fixed list.
const (
	AttrServerCommand = "snodo.server.command" // base name of the server program
	AttrServerName    = "snodo.server.name"    // the name a server is reached by elsewhere (a remote client's served name)
	AttrExitCause     = "snodo.exit.cause"     // why a connection stopped
	AttrDropReason    = "snodo.drop.reason"    // why a notification was dropped
	AttrSandboxLimit  = "snodo.sandbox.limit"  // the sandbox limit a server broke: memory, cpu

	AttrProgress        = "snodo.progress"         // progress event: how far along
	AttrProgressTotal   = "snodo.progress.total"   // progress event: the total, when known
	AttrProgressMessage = "snodo.progress.message" // progress event: the status line
	AttrInputRequests   = "snodo.input.requests"   // input_required event: how many inputs the server asked for

	MetricRequestsActive       = "snodo.client.requests.active"
	MetricServerRequestsActive = "snodo.client.server_requests.active"
	MetricServerRequestsRefuse = "snodo.client.server_requests.refused"
	MetricQueueDepth           = "snodo.client.subscription.queue.depth"
	MetricQueueOverflows       = "snodo.client.subscription.overflows"
	MetricNotificationsDropped = "snodo.client.notifications.dropped"
	MetricRestarts             = "snodo.supervisor.restarts"
	MetricGiveUps              = "snodo.supervisor.give_ups"
	MetricServerExits          = "snodo.client.server.exits"
	MetricIO                   = "snodo.client.io"
	MetricSandboxStops         = "snodo.client.sandbox.stops"

	EventProgress      = "notifications/progress"
	EventInputRequired = "input_required"
)

// DurationBuckets are the explicit histogram bounds, in seconds, the
// conventions give for the MCP duration metrics.
var DurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// ScopeName is the instrumentation scope of every tracer and meter snodo
// makes.
const ScopeName = "github.com/snodo/snodo"
