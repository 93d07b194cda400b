package kernel

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// idNamespace is the UUID namespace of every id the kernel derives. Ids are
// name-based (UUID v5) so that the same run, node, generation and attempt
// give the same id on every replay: the kernel has no randomness.
var idNamespace = uuid.MustParse("0b6a4c8e-5f0e-4f57-9a2b-7c1d3e9f4a21")

func derivedID(parts ...string) string {
	return uuid.NewSHA1(idNamespace, []byte(strings.Join(parts, "\x1f"))).String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// taskID identifies one attempt of a step instance.
func taskID(run, node string, gen, attempt int) string {
	return derivedID("task", run, node, itoa(gen), itoa(attempt))
}

// operationKey is the same for every attempt of a step instance.
func operationKey(run, node string, gen int) string {
	return derivedID("operation", run, node, itoa(gen))
}

func timerID(run string, kind TimerKind, node string, gen, attempt int) string {
	return derivedID("timer", run, string(kind), node, itoa(gen), itoa(attempt))
}

func humanTaskID(run, node string, gen int) string { return derivedID("human", run, node, itoa(gen)) }

func childRunID(run, node string, gen int) string { return derivedID("child", run, node, itoa(gen)) }

func incidentID(run, node string, gen, attempt int, code string) string {
	return derivedID("incident", run, node, itoa(gen), itoa(attempt), code)
}
