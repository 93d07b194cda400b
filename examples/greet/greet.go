// Package greet is the small project the README's factory walkthrough runs
// the software factory on.
package greet

// Greeting returns the greeting for name; an empty name greets the world.
func Greeting(name string) string {
	if name == "" {
		name = "world"
	}
	return "Hello, " + name + "!"
}
