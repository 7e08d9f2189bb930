package a2ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"mime"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
)

// EncodingBase64 is the only encoding of inline file content the SDK accepts
// (standard alphabet, padding optional).
const EncodingBase64 = "base64"

var (
	// ErrUnsupportedEncoding reports inline file content in an encoding other
	// than base64. Answer it with a status "error" result carrying
	// [contracts.ErrorUnsupportedFileEncoding].
	ErrUnsupportedEncoding = errors.New("a2ui: unsupported file encoding (only base64 is accepted)")

	// ErrSHA256Mismatch reports file bytes whose SHA-256 digest differs from
	// the one Studio sent.
	ErrSHA256Mismatch = errors.New("a2ui: the file bytes do not match their sha256 digest")
)

// FileValue is the value of a file field the agent receives in
// a submission. With storage "studio" Studio keeps the bytes and the value is
// a reference (FileID, SHA256); with storage "inline" the bytes travel in
// Content, encoded as Encoding says.
type FileValue struct {
	Storage   string `json:"storage"`
	FileID    string `json:"file_id,omitempty"`
	Filename  string `json:"filename"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256,omitempty"`
	Encoding  string `json:"encoding,omitempty"`
	Content   string `json:"content,omitempty"`
}

// Bytes decodes the content of an inline file and checks its size. It fails
// for a Studio-stored file (fetch its bytes from Studio, then call
// [FileValue.VerifySHA256]), with [ErrUnsupportedEncoding] for an encoding
// other than base64, and when the content is not base64 or its length is not
// Size.
func (v FileValue) Bytes() ([]byte, error) {
	if v.Storage != contracts.StorageInline {
		return nil, errors.New("a2ui: the bytes of a file stored in Studio are not in its value")
	}
	if v.Encoding != EncodingBase64 {
		return nil, ErrUnsupportedEncoding
	}
	b, err := base64.StdEncoding.DecodeString(v.Content)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(v.Content); err != nil {
			return nil, errors.New("a2ui: the file content is not valid base64")
		}
	}
	if int64(len(b)) != v.Size {
		return nil, fmt.Errorf("a2ui: the file content holds %d bytes, its size says %d", len(b), v.Size)
	}
	return b, nil
}

// VerifySHA256 checks data, the bytes of a Studio-stored file, against the
// value's SHA256 (64 lowercase hex digits). It returns [ErrSHA256Mismatch]
// when they differ.
func (v FileValue) VerifySHA256(data []byte) error {
	if !isSHA256Hex(v.SHA256) {
		return errors.New("a2ui: the file value has no valid sha256 (64 lowercase hex digits)")
	}
	var want [sha256.Size]byte
	if _, err := hex.Decode(want[:], []byte(v.SHA256)); err != nil {
		return errors.New("a2ui: the file value has no valid sha256 (64 lowercase hex digits)")
	}
	got := sha256.Sum256(data)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return ErrSHA256Mismatch
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseFileValue reads a submitted file value, a decoded JSON object such as
// the values passed to [ValidateValues], and checks its shape: storage
// "studio" (file_id, sha256) or "inline" (encoding "base64", content),
// filename, media_type and a non-negative integral size. The content itself is
// decoded by [FileValue.Bytes]. Errors never quote the value.
func ParseFileValue(v any) (FileValue, error) {
	switch fv := v.(type) {
	case FileValue:
		return fv, checkFileValue(&fv)
	case *FileValue:
		if fv == nil {
			return FileValue{}, errors.New("a2ui: a file value must be an object")
		}
		return *fv, checkFileValue(fv)
	}
	obj, ok := object(v)
	if !ok {
		return FileValue{}, errors.New("a2ui: a file value must be an object")
	}
	var fv FileValue
	var bad []string
	str := func(key string, dst *string) {
		raw, present := obj[key]
		if !present {
			return
		}
		if s, ok := raw.(string); ok {
			*dst = s
			return
		}
		bad = append(bad, key)
	}
	str("storage", &fv.Storage)
	str("file_id", &fv.FileID)
	str("filename", &fv.Filename)
	str("media_type", &fv.MediaType)
	str("sha256", &fv.SHA256)
	str("encoding", &fv.Encoding)
	str("content", &fv.Content)
	if len(bad) > 0 {
		return fv, fmt.Errorf("a2ui: file value key %s must be a string", bad[0])
	}
	x, ok := number(obj["size"])
	if !ok || x != math.Trunc(x) || x < 0 || x >= math.MaxInt64 {
		return fv, errors.New("a2ui: file value size must be a non-negative integer")
	}
	fv.Size = int64(x)
	return fv, checkFileValue(&fv)
}

func checkFileValue(fv *FileValue) error {
	switch {
	case strings.TrimSpace(fv.Filename) == "":
		return errors.New("a2ui: file value needs a filename")
	case strings.TrimSpace(fv.MediaType) == "":
		return errors.New("a2ui: file value needs a media_type")
	case fv.Size < 0:
		return errors.New("a2ui: file value size must be a non-negative integer")
	}
	switch fv.Storage {
	case contracts.StorageStudio:
		if strings.TrimSpace(fv.FileID) == "" {
			return errors.New("a2ui: a Studio-stored file value needs a file_id")
		}
		if !isSHA256Hex(fv.SHA256) {
			return errors.New("a2ui: a Studio-stored file value needs a sha256 of 64 lowercase hex digits")
		}
	case contracts.StorageInline:
		if fv.Encoding != EncodingBase64 {
			return ErrUnsupportedEncoding
		}
	default:
		return errors.New(`a2ui: file value storage must be "studio" or "inline"`)
	}
	return nil
}

// checkFile checks a submitted value of the file field f and returns the
// message of its first problem, or "".
func checkFile(f *Field, v any) string {
	fv, err := ParseFileValue(v)
	if err == nil && f.Storage != "" && fv.Storage != f.Storage {
		err = fmt.Errorf("a2ui: the file must be stored %q", f.Storage)
	}
	if err == nil && f.MaxBytes != nil && fv.Size > *f.MaxBytes {
		err = fmt.Errorf("a2ui: the file is larger than %d bytes", *f.MaxBytes)
	}
	if err == nil && f.Accept != "" && !accepts(f.Accept, fv.Filename, fv.MediaType) {
		err = errors.New("a2ui: the field does not accept this type of file")
	}
	if err == nil && fv.Storage == contracts.StorageInline {
		_, err = fv.Bytes()
	}
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), "a2ui: ")
}

// accepts reports whether a file matches an accept list: extensions (".md",
// compared with the end of the filename) and media types ("text/markdown",
// "image/*"), case-insensitive. A list without any entry accepts everything.
func accepts(list, filename, mediaType string) bool {
	name := strings.ToLower(filename)
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(mediaType))
	}
	empty := true
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		switch {
		case entry == "":
			continue
		case strings.HasPrefix(entry, "."):
			if strings.HasSuffix(name, entry) {
				return true
			}
		case strings.HasSuffix(entry, "/*"):
			if strings.HasPrefix(mt, strings.TrimSuffix(entry, "*")) {
				return true
			}
		case mt == entry:
			return true
		}
		empty = false
	}
	return empty
}
