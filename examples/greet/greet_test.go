package greet

import "testing"

func TestGreeting(t *testing.T) {
	for name, want := range map[string]string{"Ada": "Hello, Ada!", "": "Hello, world!"} {
		if got := Greeting(name); got != want {
			t.Errorf("Greeting(%q) = %q, want %q", name, got, want)
		}
	}
}
