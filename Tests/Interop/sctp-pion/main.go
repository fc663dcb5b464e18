// sctp-pion: an independent RFC 8831/8832 data-channel peer (pion/sctp + pion/datachannel, from
// Debian's golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev) for Conduit's
// interoperability tests. It runs SCTP directly over plain UDP, without DTLS or ICE: every UDP
// payload is one SCTP packet (RFC 6951 framing), SCTP port 5000 on both ends. Loopback only.
//
// Build in GOPATH mode (the directory: main.go and support.go):
// GO111MODULE=off GOPATH=/usr/share/gocode go run ./Tests/Interop/sctp-pion
//
//	-role server|client   server binds -local and waits; client dials -remote
//	-local ADDR           where to bind (default 127.0.0.1:0, an ephemeral port)
//	-remote ADDR          the server's address (client only)
//	-label L -protocol P  the channel this side opens (client always; server only if -label is set)
//	-ordered=BOOL         ordered delivery on that channel (default true)
//	-max-retransmits N    partial reliability, RTX policy (default -1: off)
//	-max-lifetime-ms N    partial reliability, TTL policy (default -1: off)
//	-count N -size N      messages this side sends on its channel, and their size in bytes
//	-echo                 echo every message on every channel the peer opens (same type)
//	-expect-echo=BOOL     the peer echoes what this side sends (default true): check every echo
//	-timeout S            hard limit on the whole run in seconds (default 20)
//	-stream N             the stream ID this side opens its channel on (default -1: by role, even
//	                      for the client, odd for the server; without DTLS any parity is allowed)
//	-open-after-accept    open this side's channel only once the peer has opened one (with -stream
//	                      set to the peer's stream: an OPEN on a stream in use, RFC 8832 section 6)
//	-inject KIND          right after this side's OPEN, send one message data channels do not
//	                      define on the same stream: dcep-unknown (PPID 50, message type 0x09) or
//	                      ppid-unknown (PPID 99); then the messages as usual
//	-abort-after N        after sending N messages and seeing an echo come back, abort the
//	                      association (ABORT chunk with a user-initiated cause, RFC 9260 section
//	                      9.1) instead of finishing; the run then ends at once and succeeds if the
//	                      association came up (default -1: off)
//
// The server prints `READY 127.0.0.1:PORT` on stdout once its socket is bound, learns its peer from
// the first datagram and accepts every channel the peer opens (DCEP, RFC 8832 section 6). Messages
// alternate between string (PPID 51, ASCII so valid UTF-8) and binary (PPID 53), with content fixed
// by their index, so that echoes are checked byte for byte and type for type: in order on ordered
// channels, as a multiset on unordered ones.
//
// The last line on stdout is always one JSON object:
//
//	{"channels":[{"label":..,"protocol":..}],   channels the peer opened, in order of arrival
//	 "sent":N,        messages this side originated on its own channel
//	 "received":N,    user messages received on all channels (echoes of ours included)
//	 "echoed":N,      echoedBack + verified
//	 "echoedBack":N,  messages this side echoed back (-echo)
//	 "verified":N,    echoes of our own messages that came back identical, type included
//	 "mismatches":N,  echoes that matched nothing we sent (content or type differ)
//	 "strings":N, "binaries":N,   received messages by type
//	 "error":"..."}   present only when the run failed
//
// It exits when its work is done: a client (or a server with -label) once every echo is back, or
// right after sending with -expect-echo=false; with -echo, only when the peer ends the association.
// A server with only -echo ends when the peer closes the association. The exit status is 0 when the
// association came up, nothing mismatched and every expected echo came back; otherwise 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/logging"
	"github.com/pion/sctp"
)

// Large enough for any message we exchange; pion refuses bigger ones on send.
const maxMessage = 256 * 1024

// The most this side keeps queued in pion before waiting: a bounded sender.
const maxBuffered = 1 << 20

type options struct {
	role, local, remote, label, protocol string
	inject                               string
	ordered, echo, expectEcho            bool
	openAfterAccept                      bool
	maxRetransmits, maxLifetimeMs        int
	count, size                          int
	stream, abortAfter                   int
	timeout                              float64
}

type channelInfo struct {
	Label    string `json:"label"`
	Protocol string `json:"protocol"`
}

type report struct {
	Channels   []channelInfo `json:"channels"`
	Sent       int           `json:"sent"`
	Received   int           `json:"received"`
	Echoed     int           `json:"echoed"`
	EchoedBack int           `json:"echoedBack"`
	Verified   int           `json:"verified"`
	Mismatches int           `json:"mismatches"`
	Strings    int           `json:"strings"`
	Binaries   int           `json:"binaries"`
	Aborted    bool          `json:"aborted"`
	Error      string        `json:"error,omitempty"`
}

var (
	mu          sync.Mutex
	stats       = report{Channels: []channelInfo{}}
	established bool
	finishOnce  sync.Once
)

// finish prints the report and ends the process; only the first call does anything.
func finish(failure error) {
	finishOnce.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		stats.Echoed = stats.EchoedBack + stats.Verified
		if failure == nil && stats.Mismatches > 0 {
			failure = fmt.Errorf("%d echoes did not match", stats.Mismatches)
		}
		if failure == nil && !established {
			failure = errors.New("the association never came up")
		}
		if failure != nil {
			stats.Error = failure.Error()
			fmt.Fprintf(os.Stderr, "sctp-pion: %v\n", failure)
		}
		line, _ := json.Marshal(stats)
		fmt.Fprintln(os.Stdout, string(line))
		os.Stdout.Sync()
		if failure != nil {
			os.Exit(1)
		}
		os.Exit(0)
	})
	select {} // another goroutine is exiting
}

func countReceived(isString bool) {
	stats.Received++
	if isString {
		stats.Strings++
	} else {
		stats.Binaries++
	}
}

// echoLoop serves one channel the peer opened: counts every message and, with -echo, sends it back.
func echoLoop(dc *datachannel.DataChannel, echo bool) {
	buffer := make([]byte, maxMessage)
	for {
		n, isString, err := dc.ReadDataChannel(buffer)
		if err != nil {
			return
		}
		mu.Lock()
		countReceived(isString)
		mu.Unlock()
		if echo {
			if _, err := dc.WriteDataChannel(buffer[:n], isString); err != nil {
				return
			}
			mu.Lock()
			stats.EchoedBack++
			mu.Unlock()
		}
	}
}

// openAndSend opens this side's channel, sends -count messages and checks their echoes. Stream IDs
// follow RFC 8832 section 6 with the connecting side as the DTLS client would be: even for the
// client, odd for the server.
func openAndSend(association *sctp.Association, o options, streamID uint16) error {
	stream, err := association.OpenStream(streamID, sctp.PayloadTypeWebRTCBinary)
	if err != nil {
		return err
	}
	config := channelConfig(o)
	dc, err := datachannel.Client(stream, config)
	if err != nil {
		return err
	}
	// datachannel.Client leaves the sender's own stream reliable and ordered: apply the policy.
	unordered := config.ChannelType&0x80 != 0
	switch config.ChannelType & 0x7F {
	case datachannel.ChannelTypePartialReliableRexmit:
		stream.SetReliabilityParams(unordered, sctp.ReliabilityTypeRexmit, config.ReliabilityParameter)
	case datachannel.ChannelTypePartialReliableTimed:
		stream.SetReliabilityParams(unordered, sctp.ReliabilityTypeTimed, config.ReliabilityParameter)
	default:
		stream.SetReliabilityParams(unordered, sctp.ReliabilityTypeReliable, 0)
	}

	switch o.inject {
	case "dcep-unknown": // a DCEP message type the registry leaves unassigned (RFC 8832 section 8.2.1)
		_, err = stream.WriteSCTP([]byte{0x09, 1, 2, 3}, sctp.PayloadTypeWebRTCDCEP)
	case "ppid-unknown": // a PPID data channels do not use (RFC 8831 section 8)
		_, err = stream.WriteSCTP([]byte{1, 2, 3}, sctp.PayloadProtocolIdentifier(99))
	}
	if err != nil {
		return err
	}

	// RFC 8832 section 6.6: until DATA_CHANNEL_ACK arrives the opener sends ordered messages only,
	// so an unordered channel waits for the ACK (seen by the reader below) before sending.
	acked := make(chan struct{})
	var ackOnce sync.Once
	dc.OnOpen(func() { ackOnce.Do(func() { close(acked) }) })
	echoes := make(chan bool, 64) // one value per echo read; closed when the channel ends
	go readOwnChannel(dc, o, echoes)
	if !o.ordered {
		<-acked
	}
	for index := 0; index < o.count; index++ {
		if index == o.abortAfter {
			// Mid-transfer: once an echo has come back (so the peer has surely accepted the
			// channel), with the rest still in flight both ways. The peer must see a typed end,
			// not silence. (Not more echoes: readOwnChannel stalls after 64 unread ones.)
			for {
				mu.Lock()
				verified := stats.Verified
				mu.Unlock()
				if verified > 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			stats.Aborted = true
			mu.Unlock()
			association.Abort("sctp-pion: abort requested by -abort-after")
			finish(nil)
		}
		for dc.BufferedAmount() > maxBuffered {
			time.Sleep(time.Millisecond)
		}
		payload, isString := message(index, o.size)
		if _, err := dc.WriteDataChannel(payload, isString); err != nil {
			return err
		}
		mu.Lock()
		stats.Sent++
		mu.Unlock()
	}
	if !o.expectEcho {
		for dc.BufferedAmount() > 0 {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	// A reliable channel returns every echo (or the run times out); a partially reliable one may
	// abandon some (RFC 3758), so it is done once the echoes stop for a while. The first echo may
	// take long on a loaded machine (the peer is still accepting the association and the channel),
	// so only a pause after echoes have started ends the wait; before that the run's timeout does.
	partial := o.maxRetransmits >= 0 || o.maxLifetimeMs >= 0
	for seen := 0; seen < o.count; seen++ {
		if !partial || seen == 0 {
			if _, open := <-echoes; !open {
				return nil
			}
			continue
		}
		select {
		case _, open := <-echoes:
			if !open {
				return nil
			}
		case <-time.After(3 * time.Second):
			return nil
		}
	}
	return nil
}

// readOwnChannel reads what comes back on our own channel. With -expect-echo each message must be
// one we sent, same bytes and type: on an ordered channel in order (skips allowed only when
// partially reliable, since abandoned messages never arrive), on an unordered one in any order,
// each at most once.
func readOwnChannel(dc *datachannel.DataChannel, o options, echoes chan<- bool) {
	defer close(echoes)
	partial := o.maxRetransmits >= 0 || o.maxLifetimeMs >= 0
	outstanding := map[string]int{} // content and type -> how many are still expected
	key := func(payload []byte, isString bool) string { return fmt.Sprintf("%t:%s", isString, payload) }
	if !o.ordered {
		for index := 0; index < o.count; index++ {
			outstanding[key(message(index, o.size))]++
		}
	}
	buffer := make([]byte, maxMessage)
	next := 0 // on ordered channels, the index of the next echo expected
	for {
		n, isString, err := dc.ReadDataChannel(buffer)
		if err != nil {
			return
		}
		got := buffer[:n]
		matched := false
		switch {
		case !o.expectEcho:
		case o.ordered:
			last := next
			if partial {
				last = o.count - 1
			}
			for index := next; index <= last && index < o.count; index++ {
				want, wantString := message(index, o.size)
				if isString == wantString && string(got) == string(want) {
					matched, next = true, index+1
					break
				}
			}
			if !matched && !partial {
				next++ // keep checking the rest in step
			}
		default:
			if k := key(got, isString); outstanding[k] > 0 {
				outstanding[k]--
				matched = true
			}
		}
		mu.Lock()
		countReceived(isString)
		if matched {
			stats.Verified++
		} else if o.expectEcho {
			stats.Mismatches++
		}
		mu.Unlock()
		if o.expectEcho {
			echoes <- matched
		}
	}
}

func main() {
	o := parse()
	switch {
	case o.role != "server" && o.role != "client":
		finish(errors.New("-role must be server or client"))
	case o.role == "client" && o.remote == "":
		finish(errors.New("a client needs -remote"))
	case o.size < 0 || o.size > maxMessage || o.count < 0:
		finish(fmt.Errorf("-size must be 0...%d and -count at least 0", maxMessage))
	case o.inject != "" && o.inject != "dcep-unknown" && o.inject != "ppid-unknown":
		finish(errors.New("-inject must be dcep-unknown or ppid-unknown"))
	case o.stream < -1 || o.stream > 65534:
		finish(errors.New("-stream must be -1 or 0...65534"))
	case o.timeout <= 0 || o.timeout > 600:
		finish(errors.New("-timeout must be in (0, 600] seconds"))
	}
	// Whatever happens, the run ends within -timeout.
	time.AfterFunc(time.Duration(o.timeout*float64(time.Second)), func() {
		mu.Lock()
		// Serving echoes until stopped is a normal end for a server that opened nothing.
		onlyEchoing := o.role == "server" && o.label == ""
		mu.Unlock()
		if onlyEchoing {
			finish(nil)
		}
		finish(fmt.Errorf("timed out after %gs", o.timeout))
	})

	local, err := net.ResolveUDPAddr("udp", o.local)
	if err != nil {
		finish(err)
	}
	socket, err := net.ListenUDP("udp", local)
	if err != nil {
		finish(err)
	}
	conn := &udpConn{UDPConn: socket}
	config := sctp.Config{NetConn: conn, MaxMessageSize: maxMessage, LoggerFactory: logging.NewDefaultLoggerFactory()}
	var association *sctp.Association
	if o.role == "server" {
		fmt.Printf("READY %s\n", socket.LocalAddr().String())
		os.Stdout.Sync()
		association, err = sctp.Server(config)
	} else {
		if conn.peer, err = net.ResolveUDPAddr("udp", o.remote); err != nil {
			finish(err)
		}
		association, err = sctp.Client(config)
	}
	if err != nil {
		finish(err)
	}
	mu.Lock()
	established = true
	mu.Unlock()

	// Accept every channel the peer opens, for as long as the association lives.
	associationEnded := make(chan struct{})
	firstAccepted := make(chan struct{})
	var firstOnce sync.Once
	go func() {
		defer close(associationEnded)
		var accepted []*datachannel.DataChannel
		for {
			dc, err := datachannel.Accept(association, &datachannel.Config{LoggerFactory: logging.NewDefaultLoggerFactory()}, accepted...)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return // the association is gone
				}
				continue // a new stream that did not start with a valid DCEP open: not a channel
			}
			accepted = append(accepted, dc)
			firstOnce.Do(func() { close(firstAccepted) })
			mu.Lock()
			stats.Channels = append(stats.Channels, channelInfo{Label: dc.Config.Label, Protocol: dc.Config.Protocol})
			mu.Unlock()
			go echoLoop(dc, o.echo)
		}
	}()

	opens := o.role == "client" || o.label != ""
	if opens && o.openAfterAccept {
		select {
		case <-firstAccepted:
		case <-associationEnded:
		}
	}
	if opens {
		streamID := uint16(0)
		if o.role == "server" {
			streamID = 1
		}
		if o.stream >= 0 {
			streamID = uint16(o.stream)
		}
		if err := openAndSend(association, o, streamID); err != nil {
			finish(err)
		}
		mu.Lock()
		missing := o.count - stats.Verified
		mu.Unlock()
		partial := o.maxRetransmits >= 0 || o.maxLifetimeMs >= 0
		if o.expectEcho && missing > 0 && !partial {
			finish(fmt.Errorf("%d echoes never came back", missing))
		}
		if !o.echo {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = association.Shutdown(ctx) // graceful: SHUTDOWN, RFC 9260 section 9.2
			cancel()
			_ = association.Close()
			finish(nil)
		}
	}
	<-associationEnded
	finish(nil)
}
