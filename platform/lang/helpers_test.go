package lang

import (
	"os"
	"testing"
)

// mustLock loads the catalog lock the tests and the reference share.
func mustLock(tb testing.TB) *CatalogLock {
	tb.Helper()
	raw, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		tb.Fatal(err)
	}
	lock, err := ParseCatalogLock(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return lock
}
