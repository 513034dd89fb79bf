/*
 * A Brisk client in C: connects to the server at ADDR, pinning its public
 * key (hex, as the server prints it), asks for the file on one stream,
 * writes what arrives to OUT, and closes the connection.
 *
 *   client 127.0.0.1:4433 <64 hex digits> out.file
 */
#include "brisk_loop.h"

static int parse_key(const char *hex, uint8_t key[32]) {
  if (strlen(hex) != 64) return -1;
  for (int i = 0; i < 32; i++) {
    unsigned byte;
    if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return -1;
    key[i] = (uint8_t)byte;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SERVER_ADDR:PORT SERVER_KEY_HEX OUT_FILE\n", argv[0]);
    return 2;
  }
  BriskAddr server;
  loop_check(brisk_addr_parse(argv[1], &server), "server address");
  uint8_t server_key[32];
  if (parse_key(argv[2], server_key) != 0) {
    fprintf(stderr, "server key: want 64 hex digits\n");
    return 2;
  }
  FILE *out = fopen(argv[3], "wb");
  if (out == NULL) {
    perror(argv[3]);
    return 1;
  }

  /* Bind to the unspecified address of the server's family, any port. */
  BriskAddr local;
  memset(&local, 0, sizeof local);
  local.family = server.family;
  int fd = loop_socket(&local);
  uint64_t seed;
  loop_random((uint8_t *)&seed, sizeof seed);
  BriskEndpoint *ep = brisk_endpoint_new(seed, NULL);
  if (ep == NULL) {
    fprintf(stderr, "brisk_endpoint_new: %s\n", brisk_last_error());
    return 1;
  }
  uint64_t start = loop_now_ns();
  uint64_t conn, stream = 0;
  loop_check(brisk_connect(ep, start, &server, server_key, &conn), "brisk_connect");

  uint64_t received = 0;
  int got_all = 0, closed = 0;
  uint64_t close_deadline = 0;
  uint8_t buf[64 * 1024];
  while (!closed) {
    uint64_t now = loop_now_ns();
    if (now - start > 120ull * 1000000000u) {
      fprintf(stderr, "client: gave up after 120 s with %llu bytes\n", (unsigned long long)received);
      return 1;
    }
    /* After closing, wait for the closing period, at most one second. */
    if (got_all && now > close_deadline) break;
    loop_flush(ep, fd);
    loop_wait(ep, fd);
    BriskEvent ev;
    while (brisk_poll_event(ep, &ev) == BRISK_STATUS_OK) {
      switch (ev.kind) {
        case BRISK_EVENT_KIND_CONNECTED: {
          static const char request[] = "GET\n";
          size_t written;
          loop_check(brisk_stream_open(ep, conn, true, &stream), "brisk_stream_open");
          loop_check(brisk_stream_write(ep, conn, stream, (const uint8_t *)request,
                                        sizeof request - 1, &written),
                     "brisk_stream_write");
          loop_check(brisk_stream_finish(ep, conn, stream), "brisk_stream_finish");
          break;
        }
        case BRISK_EVENT_KIND_STREAM_READABLE:
          for (;;) {
            size_t n;
            bool fin;
            BriskStatus s = brisk_stream_read(ep, conn, ev.stream, buf, sizeof buf, &n, &fin);
            loop_check(s, "brisk_stream_read");
            if (s == BRISK_STATUS_DONE) break;
            if (fwrite(buf, 1, n, out) != n) {
              perror("write");
              return 1;
            }
            received += n;
            if (fin && !got_all) {
              got_all = 1;
              loop_check(brisk_connection_close(ep, loop_now_ns(), conn, 0),
                         "brisk_connection_close");
              close_deadline = loop_now_ns() + 1000000000u;
              break;
            }
            if (fin) break;
          }
          break;
        case BRISK_EVENT_KIND_CONNECTION_LOST:
          if (!got_all) {
            fprintf(stderr, "client: %s\n", brisk_last_error());
            return 1;
          }
          break;
        case BRISK_EVENT_KIND_CLOSED:
          closed = 1;
          break;
        default:
          break;
      }
    }
  }
  loop_flush(ep, fd);
  double secs = (double)(loop_now_ns() - start) / 1e9;
  fprintf(stderr, "client: received %llu bytes in %.3f s (%.1f Mbit/s)\n",
          (unsigned long long)received, secs, (double)received * 8 / secs / 1e6);
  fclose(out);
  close(fd);
  brisk_endpoint_free(ep);
  return got_all ? 0 : 1;
}
