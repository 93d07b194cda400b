package lang

func (c *compiler) compileConnector(k *Connector) map[string]any {
	conn := c.ss.fromSource(k.Connection, "connection")
	if k.AdapterNode != nil {
		c.checkAdapter(k.Adapter, &Node{YAML: k.AdapterNode, Path: "/adapter"})
	}
	actions := []any{}
	for _, a := range k.Actions {
		c.ss.fromSource(a.Input, a.Name+".input")
		c.ss.fromSource(a.Output, a.Name+".output")
		actions = append(actions, map[string]any{
			"name":        a.Name,
			"title":       nilIfEmpty(a.Title),
			"description": nilIfEmpty(a.Description),
			"input":       schemaJSON(a.Input),
			"output":      schemaJSON(a.Output),
			"sideEffect":  a.SideEffect,
		})
	}
	caps := k.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return map[string]any{
		"format":       ConnectorFormat,
		"kind":         KindConnector,
		"id":           k.ID,
		"version":      k.Version,
		"title":        nilIfEmpty(k.Title),
		"description":  nilIfEmpty(k.Description),
		"adapter":      k.Adapter,
		"capabilities": caps,
		"connection":   schemaJSON(k.Connection),
		"secrets":      map[string]any{"connection": stringsOrEmpty(c.ss.secretPointers(conn.root()))},
		"actions":      actions,
		"references":   c.references(),
	}
}
