package callbacks

func (s *Service) domainCRUD() crud[DomainInput, AuthorizedDomain] {
	return crud[DomainInput, AuthorizedDomain]{
		base: pathDomains, tag: "authorized-domains", what: "authorized domain",
		create: s.createDomain,
		get:    s.domain,
		update: s.updateDomain,
		del:    s.deleteDomain,
		filter: s.filterDomains,
		idOf:   func(d AuthorizedDomain) string { return d.ID },
		createNotes: "The domain matches a URL's host exactly (any port), and every subdomain too when includeSubdomains is true. " +
			"Removing or narrowing a domain stops deliveries to it at once: their pending attempts are CANCELLED. " +
			"409 when the domain is already on the list.",
		createErrs: []int{409},
	}
}

func (s *Service) configCRUD() crud[ConfigurationInput, Configuration] {
	return crud[ConfigurationInput, Configuration]{
		base: pathConfigs, tag: "callback-configurations", what: "callback configuration",
		create: s.createConfig,
		get:    s.config,
		update: s.updateConfig,
		del:    s.deleteConfig,
		filter: s.filterConfigs,
		idOf:   func(c Configuration) string { return c.ID },
		createNotes: "The URL's host must be an authorized domain (409 CB-DOMAIN-NOT-AUTHORIZED otherwise); 409 CB-CONFLICT for a duplicate name. " +
			"The secret is write-only: it is stored encrypted and never returned (secretSet says whether one is stored). " +
			"On update, an omitted secret keeps the stored one, a new one rotates it (the old one keeps signing during " +
			"platform.callbacks.signature.rotation-grace) and \"\" removes it.",
		createErrs: []int{409},
	}
}

func (s *Service) subCRUD() crud[SubscriptionInput, EventSubscription] {
	return crud[SubscriptionInput, EventSubscription]{
		base: pathSubscriptions, tag: "event-subscriptions", what: "event subscription",
		create: s.createSub,
		get:    s.sub,
		update: s.updateSub,
		del:    s.deleteSub,
		filter: s.filterSubs,
		idOf:   func(sub EventSubscription) string { return sub.ID },
		createNotes: "Creating, changing or deactivating a subscription takes effect at once (the broker listeners are re-registered). " +
			"Only events published after the subscription became active (activeSince) are delivered; replay older ones. " +
			"409 for a duplicate name.",
		createErrs: []int{409},
	}
}
