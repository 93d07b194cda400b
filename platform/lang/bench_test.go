package lang

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// genWorkflow writes a workflow of n top-level steps mixing the step kinds a
// real workflow uses: actions with input mappings, variable updates,
// switches, waits and small loops (1,200 steps in all for n = 1,000, with
// about 1,000 expressions, nearly all distinct so that no memoisation
// flatters the numbers).
func genWorkflow(n int) []byte {
	var b strings.Builder
	b.WriteString(`kind: workflow
id: bench/large
version: 1
input:
  type: object
  properties:
    customerId: {type: string}
    amount: {type: number}
    items: {type: array, items: {type: object, properties: {sku: {type: string}, qty: {type: integer}}}}
vars:
  total: {type: number, default: 0}
  count: {type: integer, default: 0}
steps:
`)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `  - id: %s
    action: acme/crm.get-customer@2
    with:
      customerId: =input.customerId + "-%d"
    timeout: 30s
`, id, i)
		case 1:
			fmt.Fprintf(&b, `  - id: %s
    set:
      total: =vars.total + input.amount * %d.0
      count: =vars.count + %d
`, id, i, i)
		case 2:
			next := fmt.Sprintf("s%d", i+1)
			fmt.Fprintf(&b, `  - id: %s
    switch:
      - when: =steps.s%d.output.tier == "gold" && vars.count > %d
        next: %s
    default: %s
`, id, i-2, i, next, next)
		case 3:
			fmt.Fprintf(&b, `  - id: %s
    forEach: =input.items
    concurrency: 4
    steps:
      - id: %s_line
        set:
          count: =vars.count + item.qty * %d
`, id, id, i)
		case 4:
			fmt.Fprintf(&b, `  - id: %s
    wait: 1s
`, id)
		}
	}
	b.WriteString("result: {total: =vars.total}\n")
	return []byte(b.String())
}

func BenchmarkCompile1000Steps(b *testing.B) {
	src := genWorkflow(1000)
	lock := mustLock(b)
	r := Compile(src, Options{Catalog: lock})
	if !r.OK {
		b.Fatalf("generated workflow does not compile: %v", r.Diagnostics)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), processCPUMillis()
	for i := 0; i < b.N; i++ {
		Compile(src, Options{Catalog: lock})
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/op")
	if c := processCPUMillis(); c > 0 {
		b.ReportMetric((c-cpu)/float64(b.N), "cpu-ms/op")
	}
}
