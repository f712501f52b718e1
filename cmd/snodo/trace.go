package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// spanLog is --trace: it keeps every span of the run in memory (the
// OpenTelemetry SDK, with no exporter) and prints them on stderr when the
// run is done, as a tree with durations and attributes, so users see
// where the time went without a collector.
type spanLog struct {
	tp *sdktrace.TracerProvider

	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

// maxTraced bounds the spans --trace keeps (a long listen makes one per
// event); later ones are counted, not kept.
const maxTraced = 10000

func newSpanLog() *spanLog {
	l := &spanLog{}
	l.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(l))
	return l
}

// OnStart, OnEnd, Shutdown and ForceFlush make spanLog a SpanProcessor.
func (l *spanLog) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s.
func (l *spanLog) OnEnd(s sdktrace.ReadOnlySpan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.spans) < maxTraced {
		l.spans = append(l.spans, s)
	}
}

// Shutdown does nothing: the spans stay for print.
func (l *spanLog) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: nothing is exported.
func (l *spanLog) ForceFlush(context.Context) error { return nil }

// trace starts --trace for the run: a root span, the parent of
// everything snodo does; the returned func ends it and prints every span.
// Without --trace it does nothing.
func (s *session) trace(ctx context.Context) (context.Context, func()) {
	if !s.cfg.trace {
		return ctx, func() {}
	}
	s.spans = newSpanLog()
	ctx, root := s.spans.tp.Tracer("snodo-cli").Start(ctx, "snodo "+s.cfg.command)
	return ctx, func() {
		root.End()
		s.spans.print(s.io.err)
	}
}

// print writes every span as a tree, children under their parent in the
// order they started: name, duration, status and attributes.
func (l *spanLog) print(w io.Writer) {
	l.mu.Lock()
	spans := slices.Clone(l.spans)
	l.mu.Unlock()
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	known := map[trace.SpanID]bool{}
	for _, s := range spans {
		known[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); s.Parent().IsValid() && known[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	fmt.Fprintf(w, "trace: %d spans\n", len(spans))
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(w, "%s%s  %s%s%s\n", strings.Repeat("  ", depth), s.Name(),
			s.EndTime().Sub(s.StartTime()).Round(time.Microsecond), status(s), attributes(s.Attributes()))
		for _, ev := range s.Events() {
			fmt.Fprintf(w, "%s  · %s +%s%s\n", strings.Repeat("  ", depth), ev.Name,
				ev.Time.Sub(s.StartTime()).Round(time.Microsecond), attributes(ev.Attributes))
		}
		for _, c := range children[s.SpanContext().SpanID()] {
			walk(c, depth+1)
		}
	}
	for _, s := range roots {
		walk(s, 0)
	}
}

func status(s sdktrace.ReadOnlySpan) string {
	st := s.Status()
	if st.Code.String() != "Error" {
		return ""
	}
	if st.Description == "" {
		return "  ERROR"
	}
	return "  ERROR: " + st.Description
}

func attributes(kvs []attribute.KeyValue) string {
	if len(kvs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  ")
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", kv.Key, kv.Value.Emit())
	}
	return b.String()
}
