// Package sim is the platform's simulator (docs/platform-api.md, "Debug
// sessions"): debug sessions under P/debug/sessions, the editor host's
// offline routes under /studio/local/ and its live WebSocket channel.
//
// A session runs the compiled artifact through the same kernel that
// production runs use (platform/kernel): every effect is answered by a mock
// (action:<reference>, node:<node id>, workflow:<reference>; agent: and
// tool:<reference> in the editor host, where an agent outcome lists the
// tool calls the simulated agent makes) and time is a virtual clock that moves only by
// advance_time, so nothing outside the process is ever called. The kernel's
// Pause hook splits a run's reductions node by node for next and
// breakpoints; the reductions themselves, their order and their results are
// the kernel's own.
package sim
