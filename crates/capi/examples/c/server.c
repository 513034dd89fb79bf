/*
 * A Brisk file server in C: listens on ADDR, prints its public key (hex)
 * and the UDP port it listens on (port 0 in ADDR picks a free one) on the
 * first line of stdout, then serves FILE to one client on the first
 * stream it opens, and exits once that client has closed.
 *
 *   server 127.0.0.1:4433 some.file        (or [::1]:4433)
 */
#include "brisk_loop.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LISTEN_ADDR:PORT FILE\n", argv[0]);
    return 2;
  }
  BriskAddr listen_on;
  loop_check(brisk_addr_parse(argv[1], &listen_on), "listen address");
  FILE *file = fopen(argv[2], "rb");
  if (file == NULL) {
    perror(argv[2]);
    return 1;
  }

  uint8_t private_key[32], public_key[32];
  loop_random(private_key, sizeof private_key);
  loop_check(brisk_public_key(private_key, public_key), "brisk_public_key");
  uint64_t seed;
  loop_random((uint8_t *)&seed, sizeof seed);
  BriskEndpoint *ep = brisk_endpoint_new(seed, private_key);
  if (ep == NULL) {
    fprintf(stderr, "brisk_endpoint_new: %s\n", brisk_last_error());
    return 1;
  }
  int fd = loop_socket(&listen_on);
  struct sockaddr_storage bound;
  socklen_t bound_len = sizeof bound;
  getsockname(fd, (struct sockaddr *)&bound, &bound_len);
  for (size_t i = 0; i < sizeof public_key; i++) printf("%02x", public_key[i]);
  printf(" %u\n", (unsigned)loop_from_sockaddr(&bound).port);
  fflush(stdout);

  uint64_t conn = 0, stream = 0;
  int have_stream = 0, file_done = 0, client_gone = 0;
  uint64_t sent = 0;
  uint8_t chunk[64 * 1024];
  size_t chunk_len = 0, chunk_off = 0;
  uint64_t give_up = loop_now_ns() + 120ull * 1000000000u;

  while (!client_gone) {
    if (loop_now_ns() > give_up) {
      fprintf(stderr, "server: gave up after 120 s\n");
      return 1;
    }
    loop_wait(ep, fd);
    uint64_t accepted;
    while (brisk_accept(ep, &accepted) == BRISK_STATUS_OK) conn = accepted;
    BriskEvent ev;
    int writable = 0;
    while (brisk_poll_event(ep, &ev) == BRISK_STATUS_OK) {
      switch (ev.kind) {
        case BRISK_EVENT_KIND_STREAM_OPENED:
          if (!have_stream && brisk_stream_accept(ep, ev.connection, &stream) == BRISK_STATUS_OK) {
            have_stream = 1;
            writable = 1;
          }
          break;
        case BRISK_EVENT_KIND_STREAM_READABLE: {
          /* The request: read and ignore it. */
          uint8_t req[256];
          size_t n;
          bool fin;
          while (brisk_stream_read(ep, ev.connection, ev.stream, req, sizeof req, &n, &fin) ==
                     BRISK_STATUS_OK && !fin) {
          }
          break;
        }
        case BRISK_EVENT_KIND_STREAM_WRITABLE:
          writable = 1;
          break;
        case BRISK_EVENT_KIND_CONNECTION_LOST:
        case BRISK_EVENT_KIND_CLOSED:
          if (ev.connection == conn) client_gone = 1;
          break;
        default:
          break;
      }
    }
    /* Write file bytes until the stream takes no more. */
    while (have_stream && writable && !file_done) {
      if (chunk_off == chunk_len) {
        chunk_len = fread(chunk, 1, sizeof chunk, file);
        chunk_off = 0;
        if (chunk_len == 0) {
          loop_check(brisk_stream_finish(ep, conn, stream), "brisk_stream_finish");
          file_done = 1;
          break;
        }
      }
      size_t written = 0;
      BriskStatus s =
          brisk_stream_write(ep, conn, stream, chunk + chunk_off, chunk_len - chunk_off, &written);
      loop_check(s, "brisk_stream_write");
      chunk_off += written;
      sent += written;
      if (s == BRISK_STATUS_DONE) writable = 0;
    }
    loop_flush(ep, fd);
  }
  fprintf(stderr, "server: sent %llu bytes; the client closed\n", (unsigned long long)sent);
  fclose(file);
  close(fd);
  brisk_endpoint_free(ep);
  return file_done ? 0 : 1;
}
