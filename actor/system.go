package actor

import (
	"log/slog"
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
)

var (
	sharedOnce   sync.Once
	sharedSystem *protoactor.ActorSystem
)

// Shared returns the process-wide actor system snodo uses when the caller
// does not give one. It is created on first use with logging discarded
// (protoactor-go's default logger prints colored INFO lines to stderr).
func Shared() *protoactor.ActorSystem {
	sharedOnce.Do(func() { sharedSystem = NewQuietSystem(nil) })
	return sharedSystem
}

// NewQuietSystem creates an actor system that logs to logger, or nowhere
// when logger is nil.
func NewQuietSystem(logger *slog.Logger) *protoactor.ActorSystem {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sys := protoactor.NewActorSystem(protoactor.WithLoggerFactory(
		func(*protoactor.ActorSystem) *slog.Logger { return logger },
	))
	compactRegistry(sys)
	return sys
}

// registryBuckets is how many concurrent maps (of 32 locked shards each)
// hold a system's process registry once compactRegistry has run.
const registryBuckets = 4

// compactRegistry moves a new system's process registry into
// registryBuckets buckets. protoactor-go spreads it over 1,024 buckets of
// 32 shards: 32,768 maps, about 2.8 MiB of heap held for the system's
// life before its first actor (2.8 KiB per connection at 1,000 idle
// connections), and a fresh map table for nearly every actor added
// (about 300 bytes each). 128 shards, each its own lock, still keep
// spawns and stops apart; sends find their process through the PID's
// cache, not the registry. It runs before the system is handed to anyone,
// so nothing else reads the registry meanwhile.
func compactRegistry(sys *protoactor.ActorSystem) {
	small := &protoactor.SliceMap{LocalPIDs: make([]cmap.ConcurrentMap, registryBuckets)}
	for i := range small.LocalPIDs {
		small.LocalPIDs[i] = cmap.New()
	}
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		m.IterCb(func(id string, p any) { small.GetBucket(id).Set(id, p) })
	}
	sys.ProcessRegistry.LocalPIDs = small
}
