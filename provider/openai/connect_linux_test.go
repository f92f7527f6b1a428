package openai

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// fullBacklog returns the address of a loopback listener that never
// accepts and whose accept queue is full: Linux drops the SYN of every
// further connection, so a dial waits until its deadline, as it does for
// a host that does not answer. The listener is closed when the test ends.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	// A backlog of 0 queues one connection.
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Fill the queue: dial until a dial times out.
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("the listener's backlog does not fill on this system")
	return ""
}

// TestConnectTimeoutAgainstAFullBacklog dials a real listener that never
// completes a connection, through the kernel and Go's own dialer, many
// times: every call must end as timeout (connect), never as
// transport_failed "i/o timeout", and must not be retried.
func TestConnectTimeoutAgainstAFullBacklog(t *testing.T) {
	addr := fullBacklog(t)
	connectTimeoutEveryTime(t, "http://"+addr+"/v1", nil, 200)
}
