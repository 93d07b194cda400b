package client

import (
	"time"
)

// File is a file of an environment as the API shows it.
type File struct {
	ID            string `json:"id"`
	EnvironmentID string `json:"environment_id"`
	Name          string `json:"name"`
	MediaType     string `json:"media_type"`
	// bytes, as declared at creation and verified by finish
	Size int64 `json:"size"`
	// lowercase hex SHA-256 of the content, declared at creation and verified by finish; the download's ETag
	SHA256 string `json:"sha256"`
	// uploading or ready
	Status string `json:"status"`
	// every chunk but the last has exactly this many bytes
	ChunkSize int64 `json:"chunk_size"`
	// how many chunks the file has: ceil(size / chunk_size)
	Chunks int64 `json:"chunks"`
	// chunks stored so far (indexes 0 .. received_chunks-1): resume with index received_chunks
	ReceivedChunks int64      `json:"received_chunks"`
	ReceivedBytes  int64      `json:"received_bytes"`
	Origin         FileOrigin `json:"origin"`
	CreatedBy      string     `json:"created_by"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	// uploading only: an upload not finished by then is reclaimed (each accepted chunk extends it)
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// FileCreateRequest is the body of POST E/files and of the task routes'
// create.
type FileCreateRequest struct {
	// 1 to 255 characters, no control characters, no / or \
	Name string `json:"name"`
	// bytes, 0 to the configured maximum (platform.files.max-file-bytes)
	Size int64 `json:"size"`
	// lowercase hex SHA-256 of the whole content (64 characters)
	SHA256 string `json:"sha256"`
	// a media type such as application/pdf (default application/octet-stream)
	MediaType string `json:"media_type,omitempty"`
	// bytes per chunk, within the configured bounds (default 8 MiB)
	ChunkSize int64 `json:"chunk_size,omitempty"`
}

// FileDeletion is the answer of DELETE E/files/{identifier}.
type FileDeletion struct {
	ID string `json:"id"`
	// RetainedForRuns counts the runs that have not ended and refer to
	// the file: it is kept (hidden) until they end.
	RetainedForRuns int `json:"retained_for_runs"`
}

// FileOrigin says through which routes a file was created.
type FileOrigin struct {
	// environment (E/files), human_task or task (a worker task)
	Kind string `json:"kind"`
	// the human task or worker task
	ID string `json:"id,omitempty"`
	// the run of that task
	RunID string `json:"run_id,omitempty"`
}
