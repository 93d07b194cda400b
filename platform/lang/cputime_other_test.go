//go:build !unix

package lang

func processCPUMillis() float64 { return 0 }
