/*
 * The glue every Brisk C program needs around one non-blocking UDP socket:
 * a monotonic clock, address conversion, sending what the endpoint has to
 * send, and sleeping on the socket until a datagram or the endpoint's timer.
 * An iOS or Android app does the same with its run loop's socket source and
 * timer instead of poll().
 */
#ifndef BRISK_LOOP_H
#define BRISK_LOOP_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "brisk.h"

/* Largest datagram the endpoint sends with its default settings, with room. */
#define LOOP_DATAGRAM_BYTES 2048

static uint64_t loop_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Prints what failed, with the library's message, and exits. */
static void loop_check(BriskStatus status, const char *what) {
  if (status < 0) {
    fprintf(stderr, "%s: %s: %s\n", what, brisk_status_name(status), brisk_last_error());
    exit(1);
  }
}

static socklen_t loop_to_sockaddr(const BriskAddr *a, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (a->family == 4) {
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(a->port);
    memcpy(&in->sin_addr, a->ip, 4);
    return sizeof *in;
  }
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(a->port);
  memcpy(&in6->sin6_addr, a->ip, 16);
  return sizeof *in6;
}

static BriskAddr loop_from_sockaddr(const struct sockaddr_storage *ss) {
  BriskAddr a;
  memset(&a, 0, sizeof a);
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    a.family = 4;
    a.port = ntohs(in->sin_port);
    memcpy(a.ip, &in->sin_addr, 4);
  } else {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    a.family = 6;
    a.port = ntohs(in6->sin6_port);
    memcpy(a.ip, &in6->sin6_addr, 16);
  }
  return a;
}

/* A non-blocking UDP socket of the address's family, bound to it. */
static int loop_socket(const BriskAddr *bind_to) {
  struct sockaddr_storage ss;
  socklen_t len = loop_to_sockaddr(bind_to, &ss);
  int fd = socket(ss.ss_family, SOCK_DGRAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0) {
    perror("socket/bind");
    exit(1);
  }
  int size = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/* Sends every datagram the endpoint has ready. A full socket buffer drops
 * the datagram, which the transport treats as loss, as on a real path.
 * (This example leaves the IP header's ECN bits alone.) */
static void loop_flush(BriskEndpoint *ep, int fd) {
  uint8_t buf[LOOP_DATAGRAM_BYTES];
  BriskTransmit t;
  for (;;) {
    BriskStatus s = brisk_poll_transmit(ep, loop_now_ns(), buf, sizeof buf, &t);
    loop_check(s, "brisk_poll_transmit");
    if (s == BRISK_STATUS_DONE) return;
    struct sockaddr_storage ss;
    socklen_t len = loop_to_sockaddr(&t.destination, &ss);
    if (sendto(fd, buf, t.len, 0, (struct sockaddr *)&ss, len) < 0 && errno != EAGAIN &&
        errno != EWOULDBLOCK && errno != ENOBUFS) {
      perror("sendto");
      exit(1);
    }
  }
}

/* Sleeps until a datagram arrives or the endpoint's next deadline, then
 * hands the endpoint every waiting datagram and any due timer. */
static void loop_wait(BriskEndpoint *ep, int fd) {
  uint64_t deadline;
  struct timespec ts = {1, 0}; /* no timer armed: look again in a second */
  if (brisk_poll_timeout(ep, &deadline) == BRISK_STATUS_OK) {
    uint64_t now = loop_now_ns();
    uint64_t wait = deadline > now ? deadline - now : 0;
    ts.tv_sec = (time_t)(wait / 1000000000u);
    ts.tv_nsec = (long)(wait % 1000000000u);
  }
  struct pollfd pfd = {fd, POLLIN, 0};
  if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR) {
    perror("ppoll");
    exit(1);
  }
  uint8_t buf[65536];
  for (;;) {
    struct sockaddr_storage from;
    socklen_t from_len = sizeof from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
    if (n < 0) break;
    BriskAddr addr = loop_from_sockaddr(&from);
    loop_check(brisk_handle_datagram(ep, loop_now_ns(), &addr, 0, buf, (size_t)n),
               "brisk_handle_datagram");
  }
  if (brisk_poll_timeout(ep, &deadline) == BRISK_STATUS_OK && deadline <= loop_now_ns()) {
    loop_check(brisk_handle_timeout(ep, loop_now_ns()), "brisk_handle_timeout");
  }
}

/* 32 bytes from the system's random source. */
static void loop_random(uint8_t *out, size_t len) {
  FILE *f = fopen("/dev/urandom", "rb");
  if (f == NULL || fread(out, 1, len, f) != len) {
    perror("/dev/urandom");
    exit(1);
  }
  fclose(f);
}

#endif
