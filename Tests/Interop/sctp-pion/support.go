// Helpers of sctp-pion (see main.go for what the program does): its flags, the UDP connection
// pion runs over, and the messages and channel configuration it sends.
package main

import (
	"errors"
	"flag"
	"net"
	"sync"
	"syscall"

	"github.com/pion/datachannel"
	"github.com/pion/logging"
)

// udpConn is the net.Conn pion reads and writes: one peer on an unconnected UDP socket. Datagrams
// from anyone else are dropped, and ICMP errors (ECONNREFUSED while the server is not up yet) are
// not fatal, so INIT is simply retransmitted (RFC 9260 section 5.1, T1-init).
type udpConn struct {
	*net.UDPConn
	peerMu sync.Mutex
	peer   *net.UDPAddr
}

func (c *udpConn) currentPeer() *net.UDPAddr {
	c.peerMu.Lock()
	defer c.peerMu.Unlock()
	return c.peer
}

func (c *udpConn) Read(p []byte) (int, error) {
	for {
		n, from, err := c.UDPConn.ReadFromUDP(p)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				continue
			}
			return 0, err
		}
		c.peerMu.Lock()
		if c.peer == nil {
			c.peer = from // the server learns its peer from the first datagram
		}
		same := c.peer.IP.Equal(from.IP) && c.peer.Port == from.Port
		c.peerMu.Unlock()
		if same {
			return n, nil
		}
	}
}

func (c *udpConn) Write(p []byte) (int, error) {
	peer := c.currentPeer()
	if peer == nil {
		return 0, errors.New("no peer yet")
	}
	n, err := c.UDPConn.WriteToUDP(p, peer)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return len(p), nil // a lost packet for SCTP, which retransmits
	}
	return n, err
}

func (c *udpConn) RemoteAddr() net.Addr { return c.currentPeer() }

// message is what this side sends as message index: strings on even indexes, binary on odd ones.
func message(index, size int) ([]byte, bool) {
	isString := index%2 == 0
	out := make([]byte, size)
	for j := range out {
		if isString {
			out[j] = byte('a' + (index+j)%26)
		} else {
			out[j] = byte(index*31 + j*7 + 1)
		}
	}
	return out, isString
}

// channelConfig is the DCEP open of RFC 8832 section 5.1 for the options given.
func channelConfig(o options) *datachannel.Config {
	config := &datachannel.Config{
		Label:         o.label,
		Protocol:      o.protocol,
		LoggerFactory: logging.NewDefaultLoggerFactory(),
	}
	switch {
	case o.maxRetransmits >= 0:
		config.ChannelType = datachannel.ChannelTypePartialReliableRexmit
		config.ReliabilityParameter = uint32(o.maxRetransmits)
	case o.maxLifetimeMs >= 0:
		config.ChannelType = datachannel.ChannelTypePartialReliableTimed
		config.ReliabilityParameter = uint32(o.maxLifetimeMs)
	default:
		config.ChannelType = datachannel.ChannelTypeReliable
	}
	if !o.ordered {
		config.ChannelType |= 0x80 // the unordered bit of the channel type
	}
	return config
}

func parse() options {
	var o options
	flag.StringVar(&o.role, "role", "", "server or client")
	flag.StringVar(&o.local, "local", "127.0.0.1:0", "local UDP address")
	flag.StringVar(&o.remote, "remote", "", "remote UDP address (client)")
	flag.StringVar(&o.label, "label", "", "label of the channel this side opens")
	flag.StringVar(&o.protocol, "protocol", "", "protocol of the channel this side opens")
	flag.BoolVar(&o.ordered, "ordered", true, "ordered delivery")
	flag.IntVar(&o.maxRetransmits, "max-retransmits", -1, "partial reliability: retransmissions")
	flag.IntVar(&o.maxLifetimeMs, "max-lifetime-ms", -1, "partial reliability: lifetime in ms")
	flag.IntVar(&o.count, "count", 10, "messages to send")
	flag.IntVar(&o.size, "size", 64, "bytes per message")
	flag.BoolVar(&o.echo, "echo", false, "echo messages on channels the peer opens")
	flag.BoolVar(&o.expectEcho, "expect-echo", true, "check that the peer echoes what we send")
	flag.Float64Var(&o.timeout, "timeout", 20, "hard limit in seconds")
	flag.IntVar(&o.stream, "stream", -1, "stream ID of the channel this side opens (-1: by role)")
	flag.IntVar(&o.abortAfter, "abort-after", -1, "abort the association after sending N messages")
	flag.BoolVar(&o.openAfterAccept, "open-after-accept", false, "open only once the peer opened a channel")
	flag.StringVar(&o.inject, "inject", "", "dcep-unknown or ppid-unknown: one odd message after the OPEN")
	flag.Parse()
	return o
}
