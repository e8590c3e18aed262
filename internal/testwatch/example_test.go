package testwatch_test

import (
	"fmt"
	"testing"

	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// A test waits for a result with a watchdog rather than a time limit.
func ExampleWait() {
	t := &testing.T{} // in a test, the test's own t
	results := make(chan string, 1)
	go func() { results <- "placed" }()
	if v, ok := testwatch.Wait(t, results, "the placement result"); ok {
		fmt.Println(v)
	}
	// Output: placed
}
