//go:build !unix

package store

// lockDir is a no-op where flock is not available.
func lockDir(string) (func(), func(Holder), error) { return func() {}, func(Holder) {}, nil }

// locked is never true where flock is not available.
func locked(string) bool { return false }
