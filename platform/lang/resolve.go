package lang

// resolveRef resolves a reference against the catalog lock and records the
// outcome in the artifact's reference table under "<kind>:<reference>", the
// same spelling the simulator uses for action mock keys.
func (c *compiler) resolveRef(r *Reference, kind string) *CatalogEntry {
	if r == nil {
		return nil
	}
	key := kind + ":" + r.Text
	if c.cat == nil {
		c.unresolved = true
		c.diags.warnf(CodeRefUnresolved, c.src.rangeOf(r.YAML), r.Path,
			"%s %s is not resolved: no catalog lock was given, so the result is partial", kindLabel(kind), r.Text)
		c.refs[key] = map[string]any{"kind": kind, "id": r.ID, "version": r.Version, "resolved": false}
		return nil
	}
	e, rerr := c.cat.resolve(kind, r.ID, r.Version)
	if rerr != nil {
		c.unresolved = true
		c.diags.errorf(rerr.code, c.src.rangeOf(r.YAML), r.Path, "%s", rerr.msg)
		c.refs[key] = map[string]any{"kind": kind, "id": r.ID, "version": r.Version, "resolved": false}
		return nil
	}
	entry := map[string]any{
		"kind":               kind,
		"id":                 e.ID,
		"version":            e.Version,
		"publishedVersionId": e.PublishedVersionID,
		"digest":             e.Digest,
		"resolved":           true,
	}
	if e.SideEffect != "" {
		entry["sideEffect"] = e.SideEffect
	}
	c.refs[key] = entry
	return e
}

// entrySchemas compiles a catalog entry's schemas once per compilation.
// Problems are reported at the reference that brought the entry in.
func (c *compiler) entrySchemas(e *CatalogEntry, r *Reference) *entrySchemas {
	if e == nil {
		return &entrySchemas{}
	}
	if es, ok := c.entryDocs[e]; ok {
		return es
	}
	es := &entrySchemas{}
	label := e.ID + "@" + itoa(e.Version)
	var err error
	if es.input, err = c.ss.fromJSON(e.InputSchema, label+".input"); err != nil {
		c.diags.errorf(CodeSchema, c.src.rangeOf(r.YAML), r.Path, "catalog entry %s: input schema: %v", label, err)
		es.input = nil
	}
	if es.output, err = c.ss.fromJSON(e.OutputSchema, label+".output"); err != nil {
		c.diags.errorf(CodeSchema, c.src.rangeOf(r.YAML), r.Path, "catalog entry %s: output schema: %v", label, err)
		es.output = nil
	}
	c.entryDocs[e] = es
	return es
}

func (c *compiler) references() map[string]any {
	out := make(map[string]any, len(c.refs))
	for k, v := range c.refs {
		out[k] = v
	}
	return out
}
