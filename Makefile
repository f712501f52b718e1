GO ?= go

.PHONY: test demo bench vet fmt

# The test command the README gives and CI runs.
test: vet
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

demo:
	$(GO) run ./examples/demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
