package bridge

import "encoding/json"

// OpenAPIJSON is the bridge's OpenAPI document (what GET
// /v1/bridge/openapi.json answers), for the copy the services listener's
// API documentation shows (README: API documentation).
func (s *Service) OpenAPIJSON() ([]byte, error) {
	return json.Marshal(s.openAPI())
}
