package kernel

// FilePositions says where the values of a program's runs hold file
// references: the positions whose schema says x-file: true (see
// docs/workflow-language.md, "Files"), as JSON Pointers with "*" for any
// array element or map member. Maps leave out what holds none. A file
// reference inside a recursive schema is not listed.
type FilePositions struct {
	// Input is the run's input.
	Input []string
	// Steps are the outputs of action nodes (a worker's task output), by
	// node id.
	Steps map[string][]string
	// Forms are the data of human nodes, by node id.
	Forms map[string][]string
	// Signals are signal payloads, by signal name.
	Signals map[string][]string
}

// None reports whether no value of the program holds a file reference.
func (f FilePositions) None() bool {
	return len(f.Input)+len(f.Steps)+len(f.Forms)+len(f.Signals) == 0
}

// Files answers where the values of the program's runs hold file
// references.
func (p *Program) Files() FilePositions {
	f := FilePositions{Input: p.input.filePointers(), Steps: map[string][]string{}, Forms: map[string][]string{},
		Signals: map[string][]string{}}
	put := func(m map[string][]string, key string, sc *schema) {
		if ptrs := sc.filePointers(); len(ptrs) > 0 {
			m[key] = mergePointers(m[key], ptrs)
		}
	}
	for _, n := range p.order {
		put(f.Steps, n.id, n.output)
		put(f.Forms, n.id, n.form)
		if n.signal != "" {
			put(f.Signals, n.signal, n.payload)
		}
	}
	return f
}

// filePointers lists the file reference positions of a schema.
func (s *schema) filePointers() []string {
	if s == nil {
		return nil
	}
	return s.markedPointers(isFileSchema, nil)
}

// isFileSchema reports whether a schema object marks a file reference.
func isFileSchema(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["x-file"] == true
}
