//go:build race

package remote

func init() { raceBuild = true }
