package decision

import (
	"fmt"
	"testing"
)

// uniqueTable1000 builds a 1,000-rule UNIQUE table: rule i matches weights in
// [10i, 10i+10) for one of two country groups, so every input hits one rule.
func uniqueTable1000(tb testing.TB) *Compiled {
	tb.Helper()
	t := &Table{
		HitPolicy: "UNIQUE",
		Inputs:    []Input{{Name: "order.weight", Type: "number"}, {Name: "country", Type: "string"}},
		Outputs:   []Output{{Name: "fee", Type: "number"}},
	}
	for i := range 1000 {
		countries := `"DE","AT","CH"`
		if i%2 == 1 {
			countries = `not("DE","AT","CH")`
		}
		t.Rules = append(t.Rules, Rule{
			When: UnaryTests{UnaryTest(fmt.Sprintf("[%d..%d)", i*5, i*5+10)), UnaryTest(countries)},
			Then: []any{float64(i)},
		})
	}
	c, err := Compile(t)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func benchInputs() []map[string]any {
	inputs := make([]map[string]any, 256)
	for i := range inputs {
		w := float64((i * 7919) % 5000) // spread over the table
		country := "DE"
		if int(w)/5%2 == 1 {
			country = "FR"
		}
		if int(w)%10 >= 5 { // the overlapping half-ranges belong to the neighbour rule
			if country == "DE" {
				country = "FR"
			} else {
				country = "DE"
			}
		}
		inputs[i] = map[string]any{"order": map[string]any{"weight": w + 0.5}, "country": country}
	}
	return inputs
}

func BenchmarkEvaluateUnique1000(b *testing.B) {
	c := uniqueTable1000(b)
	inputs := benchInputs()
	for _, in := range inputs { // the benchmark only measures successful evaluations
		if _, err := c.Evaluate(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Evaluate(inputs[i%len(inputs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}
