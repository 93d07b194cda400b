package file

import (
	"encoding/hex"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
)

// Problem codes of the file routes (docs/platform-api.md, "Files").
const (
	// CodeChunkConflict: a chunk index already stored with other bytes.
	CodeChunkConflict = "PF-FILE-CHUNK-CONFLICT"
	// CodeChunkOrder: a chunk beyond the next expected index.
	CodeChunkOrder = "PF-FILE-CHUNK-ORDER"
	// CodeIncomplete: finish before every chunk arrived.
	CodeIncomplete = "PF-FILE-INCOMPLETE"
	// CodeDigest: the stored bytes do not have the declared SHA-256.
	CodeDigest = "PF-FILE-DIGEST"
	// CodeState: the file is not uploading (finished) or not ready (still
	// uploading) for the operation.
	CodeState = "PF-FILE-STATE"
	// CodeCapacity: the environment's file count or byte quota is spent.
	CodeCapacity = "PF-OPERATION-CAPACITY"
)

// Statuses of a file.
const (
	StatusUploading = "uploading"
	StatusReady     = "ready"
	statusDeleted   = "deleted"
)

// Origins of a file: the routes that created it.
const (
	OriginEnvironment = "environment"
	OriginHumanTask   = "human_task"
	OriginTask        = "task"
)

// Limits bound files; every one is a configuration key
// (platform.files.*, docs/platform-api.md "Files").
type Limits struct {
	// MinChunkBytes and MaxChunkBytes bound a file's chunk_size;
	// DefaultChunkBytes is used when the request has none.
	MinChunkBytes, MaxChunkBytes, DefaultChunkBytes int64
	// MaxFileBytes bounds one file's size.
	MaxFileBytes int64
	// MaxFiles bounds the files (uploading and ready) of an environment.
	MaxFiles int64
	// MaxTotalBytes bounds the declared bytes of an environment's files
	// (uploading and ready).
	MaxTotalBytes int64
	// UploadTTL is how long an upload lives after its last accepted chunk
	// (or its creation) before it is reclaimed.
	UploadTTL time.Duration
}

// DefaultLimits are the limits when the configuration says nothing.
func DefaultLimits() Limits {
	return Limits{MinChunkBytes: 64 << 10, MaxChunkBytes: 16 << 20, DefaultChunkBytes: 8 << 20,
		MaxFileBytes: 8 << 30, MaxFiles: 10000, MaxTotalBytes: 64 << 30, UploadTTL: 24 * time.Hour}
}

// Name and media type bounds.
const (
	MaxNameLen      = 255
	MaxMediaTypeLen = 255
	defaultMedia    = "application/octet-stream"
)

// File is a file of an environment as the API shows it.
type File struct {
	ID             string     `json:"id" format:"uuid"`
	EnvironmentID  string     `json:"environment_id" format:"uuid"`
	Name           string     `json:"name"`
	MediaType      string     `json:"media_type"`
	Size           int64      `json:"size" doc:"bytes, as declared at creation and verified by finish"`
	SHA256         string     `json:"sha256" doc:"lowercase hex SHA-256 of the content, declared at creation and verified by finish; the download's ETag"`
	Status         string     `json:"status" doc:"uploading or ready"`
	ChunkSize      int64      `json:"chunk_size" doc:"every chunk but the last has exactly this many bytes"`
	Chunks         int64      `json:"chunks" doc:"how many chunks the file has: ceil(size / chunk_size)"`
	ReceivedChunks int64      `json:"received_chunks" doc:"chunks stored so far (indexes 0 .. received_chunks-1): resume with index received_chunks"`
	ReceivedBytes  int64      `json:"received_bytes"`
	Origin         Origin     `json:"origin"`
	CreatedBy      string     `json:"created_by" format:"uuid"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty" doc:"uploading only: an upload not finished by then is reclaimed (each accepted chunk extends it)"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
}

// Origin says through which routes a file was created.
type Origin struct {
	Kind  string `json:"kind" doc:"environment (E/files), human_task or task (a worker task)"`
	ID    string `json:"id,omitempty" format:"uuid" doc:"the human task or worker task"`
	RunID string `json:"run_id,omitempty" format:"uuid" doc:"the run of that task"`
}

// CreateRequest is the body of POST E/files and of the task routes'
// create.
type CreateRequest struct {
	Name      string `json:"name" api:"required" doc:"1 to 255 characters, no control characters, no / or \\"`
	Size      int64  `json:"size" api:"required" doc:"bytes, 0 to the configured maximum (platform.files.max-file-bytes)"`
	SHA256    string `json:"sha256" api:"required" doc:"lowercase hex SHA-256 of the whole content (64 characters)"`
	MediaType string `json:"media_type,omitempty" doc:"a media type such as application/pdf (default application/octet-stream)"`
	ChunkSize int64  `json:"chunk_size,omitempty" doc:"bytes per chunk, within the configured bounds (default 8 MiB)"`
}

// chunks is how many chunks a file of size bytes has.
func chunks(size, chunkSize int64) int64 {
	return (size + chunkSize - 1) / chunkSize
}

// chunkLen is the length of chunk i.
func chunkLen(size, chunkSize, i int64) int64 {
	if rest := size - i*chunkSize; rest < chunkSize {
		return rest
	}
	return chunkSize
}

// checkCreate validates a creation request against the limits (pointer
// prefix p for nested bodies) and fills the defaults.
func checkCreate(req *CreateRequest, l Limits) error {
	if n := utf8.RuneCountInString(req.Name); strings.TrimSpace(req.Name) == "" || n > MaxNameLen ||
		strings.ContainsAny(req.Name, `/\`) || strings.IndexFunc(req.Name, unicode.IsControl) >= 0 {
		return api.Invalid("/name", "name has 1 to %d characters, is not blank and has no control characters, / or \\", MaxNameLen)
	}
	if req.Size < 0 || req.Size > l.MaxFileBytes {
		return api.Invalid("/size", "size is 0 to %d bytes", l.MaxFileBytes)
	}
	if len(req.SHA256) != 64 || strings.ToLower(req.SHA256) != req.SHA256 {
		return api.Invalid("/sha256", "sha256 is the content's SHA-256 in lowercase hex (64 characters)")
	}
	if _, err := hex.DecodeString(req.SHA256); err != nil {
		return api.Invalid("/sha256", "sha256 is the content's SHA-256 in lowercase hex (64 characters)")
	}
	if req.MediaType == "" {
		req.MediaType = defaultMedia
	} else if len(req.MediaType) > MaxMediaTypeLen {
		return api.Invalid("/media_type", "media_type has at most %d characters", MaxMediaTypeLen)
	} else if _, _, err := mime.ParseMediaType(req.MediaType); err != nil || strings.IndexFunc(req.MediaType, unicode.IsControl) >= 0 {
		return api.Invalid("/media_type", "media_type is not a media type (type/subtype)")
	}
	if req.ChunkSize == 0 {
		req.ChunkSize = l.DefaultChunkBytes
	}
	if req.ChunkSize < l.MinChunkBytes || req.ChunkSize > l.MaxChunkBytes {
		return api.Invalid("/chunk_size", "chunk_size is %d to %d bytes", l.MinChunkBytes, l.MaxChunkBytes)
	}
	return nil
}

// stateConflict is 409 PF-FILE-STATE.
func stateConflict(format string, args ...any) error {
	return api.Conflict(CodeState, format, args...)
}

// capacity is 429 PF-OPERATION-CAPACITY for a spent quota.
func capacity(format string, args ...any) error {
	return &api.Error{Code: CodeCapacity, Message: fmt.Sprintf(format, args...)}
}
