package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// The load driver's client is a minimal HTTP/1.1 writer and reader on raw
// keep-alive TCP connections, not net/http's Transport: the Transport
// costs more CPU per request than the baseline server does, and on a
// machine with few cores a client that heavy slows both servers alike and
// pulls every ratio toward 1. Requests are encoded once (only the token
// changes); responses are read by their Content-Length or chunked framing
// into a reused buffer.

// requestTimeout bounds one request on a raw connection, as the
// http.Client of the probes does.
const requestTimeout = 10 * time.Second

// rawRequest is a pre-encoded POST: head, then the token, then tail (the
// rest of the headers and the body).
type rawRequest struct {
	addr string // host:port to dial
	// pre runs up to the Content-Length value, mid from its end to the
	// token; body is the request's own body (encodeBody sends another).
	pre, mid, body []byte
}

// newRawRequest encodes a POST of body to t, the workspace token left out.
func newRawRequest(t target, body []byte) (*rawRequest, error) {
	u, err := url.Parse(t.url)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("%s: not an http URL: %s", t.name, t.url)
	}
	pre := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-Api-Key: %s\r\nContent-Length: ",
		u.RequestURI(), u.Host, t.apiKey)
	mid := []byte("\r\nX-Supervaize-Workspace-Authorization: Bearer ")
	return &rawRequest{addr: u.Host, pre: pre, mid: mid, body: body}, nil
}

// encodeBody appends the request carrying token and body to buf.
func (r *rawRequest) encodeBody(buf []byte, token string, body []byte) []byte {
	buf = append(buf, r.pre...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, r.mid...)
	buf = append(buf, token...)
	buf = append(buf, "\r\n\r\n"...)
	return append(buf, body...)
}

// rawConn is one keep-alive connection of a worker; it redials after the
// server closed it.
type rawConn struct {
	req  *rawRequest
	conn net.Conn
	br   *bufio.Reader
	out  []byte // the encoded request
}

func newRawConn(req *rawRequest) *rawConn { return &rawConn{req: req} }

// do sends the request with token and returns the status and buf holding
// the response body.
func (c *rawConn) do(token string, buf []byte) (int, []byte, error) {
	return c.doBody(token, c.req.body, buf)
}

// doBody is do sending body instead of the request's own.
func (c *rawConn) doBody(token string, body, buf []byte) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.req.addr)
		if err != nil {
			return 0, buf, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	c.out = c.req.encodeBody(c.out[:0], token, body)
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		c.close()
		return 0, buf, err
	}
	if _, err := c.conn.Write(c.out); err != nil {
		c.close()
		return 0, buf, err
	}
	status, buf, keepAlive, err := readResponse(c.br, buf)
	if err != nil || !keepAlive {
		c.close()
	}
	return status, buf, err
}

// close closes the connection; the next request dials again.
func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

var (
	errBadStatusLine = errors.New("malformed HTTP status line")
	errBadHeader     = errors.New("malformed HTTP header")
	errBadChunk      = errors.New("malformed chunked body")
	errTooLarge      = errors.New("response larger than 1 MiB")
)

// maxHeaderLine bounds one status or header line, maxHeaders their number.
const (
	maxHeaderLine = 8 << 10
	maxHeaders    = 100
)

// readResponse reads one HTTP/1.x response from br and appends its body
// to buf. The body is delimited by Transfer-Encoding: chunked, else by
// Content-Length, else (HTTP/1.0 style) by the end of the connection;
// responses to a HEAD are not expected. 1xx interim responses are skipped.
// keepAlive is false when the connection cannot carry another request (the
// server asked to close it, or the body ran to its end).
func readResponse(br *bufio.Reader, buf []byte) (status int, body []byte, keepAlive bool, err error) {
	for {
		status, keepAlive, length, chunked, err := readHead(br)
		if err != nil {
			return 0, buf, false, err
		}
		if status >= 100 && status < 200 && status != 101 {
			continue
		}
		switch {
		case status == 204 || status == 304 || status == 101:
			return status, buf, keepAlive && status != 101, nil
		case chunked:
			buf, err = readChunked(br, buf)
		case length >= 0:
			buf, err = readN(br, buf, length)
		default:
			buf, err = readToEOF(br, buf)
			keepAlive = false
		}
		return status, buf, keepAlive && err == nil, err
	}
}

// readHead reads a status line and headers. length is -1 when the response
// has no Content-Length.
func readHead(br *bufio.Reader) (status int, keepAlive bool, length int, chunked bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, 0, false, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || (line[7] != '0' && line[7] != '1') ||
		line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return 0, false, 0, false, errBadStatusLine
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, 0, false, errBadStatusLine
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return 0, false, 0, false, errBadStatusLine
	}
	keepAlive, length = line[7] == '1', -1
	for n := 0; ; n++ {
		if n > maxHeaders {
			return 0, false, 0, false, errBadHeader
		}
		line, err := readLine(br)
		if err != nil {
			return 0, false, 0, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return 0, false, 0, false, errBadHeader
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "content-length"):
			n, ok := parseLength(value)
			if !ok || (length >= 0 && n != length) {
				return 0, false, 0, false, errBadHeader
			}
			length = n
		case asciiEqualFold(name, "transfer-encoding"):
			if !asciiEqualFold(value, "chunked") {
				return 0, false, 0, false, fmt.Errorf("unsupported Transfer-Encoding %q", value)
			}
			chunked = true
		case asciiEqualFold(name, "connection"):
			if asciiEqualFold(value, "close") {
				keepAlive = false
			} else if asciiEqualFold(value, "keep-alive") {
				keepAlive = true
			}
		}
	}
	if chunked {
		length = -1 // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3)
	}
	return status, keepAlive, length, chunked, nil
}

// readLine returns one CRLF-terminated line without its CRLF; the line is
// valid until the next read from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine:
		return nil, errBadHeader
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, errBadHeader
	}
	return line[:len(line)-2], nil
}

// parseLength parses a non-negative decimal Content-Length or chunk size
// (base 10 or 16) no larger than maxResponse.
func parseLength(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 8 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v), 10, 32)
	if err != nil || n > maxResponse {
		return 0, false
	}
	return int(n), true
}

// readN appends exactly n bytes of br to buf.
func readN(br *bufio.Reader, buf []byte, n int) ([]byte, error) {
	if len(buf)+n > maxResponse {
		return buf, errTooLarge
	}
	start := len(buf)
	buf = append(buf, make([]byte, n)...)
	if _, err := io.ReadFull(br, buf[start:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf[:start], err
	}
	return buf, nil
}

// readToEOF appends the rest of the connection to buf.
func readToEOF(br *bufio.Reader, buf []byte) ([]byte, error) {
	return readAll(br, buf)
}

// readChunked appends a chunked body (RFC 9112 §7.1) to buf; chunk
// extensions and trailers are read and ignored.
func readChunked(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return buf, err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimRight(line, " \t")
		if len(line) == 0 || len(line) > 8 {
			return buf, errBadChunk
		}
		size, err := strconv.ParseUint(string(line), 16, 32)
		if err != nil {
			return buf, errBadChunk
		}
		if size == 0 {
			for { // trailers, up to the empty line
				line, err := readLine(br)
				if err != nil {
					return buf, err
				}
				if len(line) == 0 {
					return buf, nil
				}
			}
		}
		if size > maxResponse {
			return buf, errTooLarge
		}
		if buf, err = readN(br, buf, int(size)); err != nil {
			return buf, err
		}
		if crlf, err := readLine(br); err != nil || len(crlf) != 0 {
			return buf, errBadChunk
		}
	}
}

// asciiEqualFold reports whether b equals the lower-case ASCII string
// lower, ignoring ASCII letter case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
