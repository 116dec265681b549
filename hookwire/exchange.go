package hookwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Exchange sends one hook input to the local engine on the Unix socket at
// path and returns the body of its answer (as localengine.Post does, over
// HTTP/1.1, without net/http: the thin hook stays small and starts fast).
// A 409 is ErrStale; any other status but 200 an error with the engine's
// message.
func Exchange(ctx context.Context, path string, in Input) ([]byte, error) {
	conn, err := dialSocket(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", path, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(time.Minute))
	}
	target := HookPath(in.Host)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: engine\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", target, len(in.Body))
	for _, h := range Headers(in) {
		fmt.Fprintf(&req, "%s: %s\r\n", h[0], h[1])
	}
	req.WriteString("\r\n")
	req.Write(in.Body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, fmt.Errorf("engine %s: %w", path, err)
	}
	r := bufio.NewReader(conn)
	status, length, err := readHead(r)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", path, err)
	}
	_, code, _ := strings.Cut(status, " ")
	code, _, _ = strings.Cut(code, " ")
	var body []byte
	if length >= 0 && length <= 1<<20 {
		body = make([]byte, length)
		if _, err = io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("engine %s: %w", path, err)
		}
	} else if body, err = io.ReadAll(io.LimitReader(r, 1<<20)); err != nil {
		return nil, fmt.Errorf("engine %s: %w", path, err)
	}
	switch code {
	case "200":
		return body, nil
	case "409":
		return nil, fmt.Errorf("engine %s: %w", path, ErrStale)
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return nil, fmt.Errorf("engine %s: %s: %s", path, status, e.Error)
}

// readHead reads an HTTP/1.1 answer's status line and headers: the status
// line, and its Content-Length (-1 without one).
func readHead(r *bufio.Reader) (status string, length int, err error) {
	line := func() (string, error) {
		l, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		return strings.TrimRight(l, "\r\n"), nil
	}
	if status, err = line(); err != nil {
		return "", 0, err
	}
	length = -1
	for n := 0; ; n++ {
		h, err := line()
		if err != nil {
			return "", 0, err
		}
		if h == "" {
			return status, length, nil
		}
		if n > 100 {
			return "", 0, fmt.Errorf("more than 100 header lines")
		}
		name, value, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
				length = -1
			}
		}
	}
}

// HookPath is the hook API's path for a host's input ("": an AARTS
// event).
func HookPath(host string) string {
	if host == "" {
		return "/v1/hooks"
	}
	return "/v1/hooks/" + host
}

// Headers are the request headers that carry what an Input says besides
// its body.
func Headers(in Input) [][2]string {
	var h [][2]string
	if in.AutoApprove {
		h = append(h, [2]string{HeaderAutoApprove, "1"})
	}
	if in.HostAsks {
		h = append(h, [2]string{HeaderHostAsks, "1"})
	}
	if in.Unattended {
		h = append(h, [2]string{HeaderUnattended, "1"})
	}
	if in.Monitor {
		h = append(h, [2]string{HeaderMonitor, "1"})
	}
	if in.Config != nil {
		h = append(h, [2]string{HeaderConfig, in.Config.Header()})
	}
	if in.Binary != "" {
		h = append(h, [2]string{HeaderBinary, in.Binary})
	}
	if in.Size > int64(len(in.Body)) {
		h = append(h, [2]string{HeaderInputSize, strconv.FormatInt(in.Size, 10)}, [2]string{HeaderInputSHA256, in.SHA256})
		if in.Truncated {
			h = append(h, [2]string{HeaderInputTruncated, "1"})
		}
	}
	return h
}
