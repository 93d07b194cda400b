package platform

import (
	"fmt"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/platform/file"
)

// FilesConfig is platform.files: the bounds of uploaded files
// (docs/platform-api.md, "Files"), each also an environment variable
// (PLATFORM_FILES_MAX_FILE_BYTES, ...).
type FilesConfig struct {
	MinChunkBytes     int64           `yaml:"min-chunk-bytes"`
	MaxChunkBytes     int64           `yaml:"max-chunk-bytes"`
	DefaultChunkBytes int64           `yaml:"default-chunk-bytes"`
	MaxFileBytes      int64           `yaml:"max-file-bytes"`
	MaxFiles          int64           `yaml:"max-files"`
	MaxTotalBytes     int64           `yaml:"max-total-bytes"`
	UploadTTL         config.Duration `yaml:"upload-ttl"`
}

func defaultFilesConfig() FilesConfig {
	l := file.DefaultLimits()
	return FilesConfig{MinChunkBytes: l.MinChunkBytes, MaxChunkBytes: l.MaxChunkBytes, DefaultChunkBytes: l.DefaultChunkBytes,
		MaxFileBytes: l.MaxFileBytes, MaxFiles: l.MaxFiles, MaxTotalBytes: l.MaxTotalBytes, UploadTTL: config.Duration(l.UploadTTL)}
}

func (c FilesConfig) limits() file.Limits {
	return file.Limits{MinChunkBytes: c.MinChunkBytes, MaxChunkBytes: c.MaxChunkBytes, DefaultChunkBytes: c.DefaultChunkBytes,
		MaxFileBytes: c.MaxFileBytes, MaxFiles: c.MaxFiles, MaxTotalBytes: c.MaxTotalBytes, UploadTTL: c.UploadTTL.D()}
}

// Validate checks platform.files.
func (c *FilesConfig) Validate() error {
	switch {
	case c.MinChunkBytes < 1 || c.MinChunkBytes > c.MaxChunkBytes:
		return fmt.Errorf("min-chunk-bytes %d must be 1 to max-chunk-bytes (%d)", c.MinChunkBytes, c.MaxChunkBytes)
	case c.MaxChunkBytes > 64<<20:
		return fmt.Errorf("max-chunk-bytes %d exceeds 64 MiB", c.MaxChunkBytes)
	case c.DefaultChunkBytes < c.MinChunkBytes || c.DefaultChunkBytes > c.MaxChunkBytes:
		return fmt.Errorf("default-chunk-bytes %d must be within min-chunk-bytes and max-chunk-bytes", c.DefaultChunkBytes)
	case c.MaxFileBytes < 0:
		return fmt.Errorf("max-file-bytes %d must not be negative", c.MaxFileBytes)
	case c.MaxFiles < 1:
		return fmt.Errorf("max-files %d must be at least 1", c.MaxFiles)
	case c.MaxTotalBytes < 0:
		return fmt.Errorf("max-total-bytes %d must not be negative", c.MaxTotalBytes)
	case c.UploadTTL.D() < time.Minute:
		return fmt.Errorf("upload-ttl %s must be at least 1m", c.UploadTTL.D())
	}
	return nil
}
