/*
 * The native sink of `npm run bench:exporter` (scripts/bench-parties.ts compiles it with `cc -O2`
 * when the bench starts). The same behaviour as the Node sink there, in C on one epoll loop, so
 * that the sink costs the shared two cores a few µs a request rather than Node's ~10 and is never
 * what sets the pace:
 * - listens on 127.0.0.1 on a free port and prints `PORT <n>`;
 * - reads HTTP/1.1 requests on keep-alive connections (body by content-length, or chunked; header
 *   names in any case; requests that come together are answered in one write);
 * - a POST (any method but GET) counts one message on its path, or, on a path starting with
 *   `/batch-`, the messages its body carries (its `"id":` members), and is answered 200 with an
 *   empty body;
 * - `GET /?path=P` answers `{"count":N,"first":F,"last":L}`: the messages counted on P and the
 *   times of the first and the last (ms, monotonic clock), zeros for a path never seen;
 * - a bad content-length or chunk size is answered 400 and the connection closed;
 * - `/arc-*` paths (the limited sink of bench:arc) are answered 501: that bench uses the Node sink.
 * It ends with its parent (PR_SET_PDEATHSIG) or on SIGTERM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  char *path;
  size_t len;
  long long count;
  double first, last;
} Stat;

#define SLOTS 8192 /* paths a run: a few hundred at most */
static Stat stats[SLOTS];

typedef struct {
  int fd;
  int closing; /* a 400 was queued: no more reading, closed once written */
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_len, out_off, out_cap;
} Conn;

static int epfd;
static struct timespec started;
static char *scratch; /* a chunked body, decoded */
static size_t scratch_cap;

static const char OK[] = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nkeep-alive: timeout=60\r\n\r\n";
static const char BAD[] = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
static const char ARC[] = "HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n";

static void *grow(void *p, size_t *cap, size_t need) {
  if (need <= *cap) return p;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  p = realloc(p, c);
  if (!p) {
    perror("realloc");
    exit(1);
  }
  *cap = c;
  return p;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - started.tv_sec) * 1e3 + (double)(t.tv_nsec - started.tv_nsec) / 1e6;
}

static Stat *stat_for(const char *p, size_t n, int create) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
  for (size_t k = 0; k < SLOTS; k++) {
    Stat *s = &stats[(h + k) % SLOTS];
    if (!s->path) {
      if (!create) return NULL;
      s->path = malloc(n + 1);
      memcpy(s->path, p, n);
      s->path[n] = 0;
      s->len = n;
      return s;
    }
    if (s->len == n && memcmp(s->path, p, n) == 0) return s;
  }
  fprintf(stderr, "sink: more than %d paths\n", SLOTS);
  exit(1);
}

static void out_add(Conn *c, const char *p, size_t n) {
  c->out = grow(c->out, &c->out_cap, c->out_len + n);
  memcpy(c->out + c->out_len, p, n);
  c->out_len += n;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* The value of `path=` in the query of url[0, n), percent-decoded ('+' is a space) into dst; its length, or -1. */
static long query_path(const char *url, size_t n, char *dst) {
  const char *q = memchr(url, '?', n);
  if (!q) return -1;
  const char *end = url + n;
  for (const char *p = q + 1; p < end;) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *stop = amp ? amp : end;
    if (stop - p >= 5 && memcmp(p, "path=", 5) == 0) {
      long len = 0;
      for (const char *v = p + 5; v < stop; v++) {
        if (*v == '%' && stop - v >= 3 && hexval(v[1]) >= 0 && hexval(v[2]) >= 0) {
          dst[len++] = (char)(hexval(v[1]) * 16 + hexval(v[2]));
          v += 2;
        } else
          dst[len++] = *v == '+' ? ' ' : *v;
      }
      return len;
    }
    p = stop + 1;
  }
  return -1;
}

static void answer_get(Conn *c, const char *url, size_t n) {
  char *path = malloc(n + 1);
  long len = query_path(url, n, path);
  Stat *s = len >= 0 ? stat_for(path, (size_t)len, 0) : NULL;
  free(path);
  char body[160], head[160];
  int blen = snprintf(body, sizeof body, "{\"count\":%lld,\"first\":%.3f,\"last\":%.3f}", s ? s->count : 0,
                      s ? s->first : 0.0, s ? s->last : 0.0);
  int hlen = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n", blen);
  out_add(c, head, (size_t)hlen);
  out_add(c, body, (size_t)blen);
}

static long long count_ids(const char *p, size_t n) {
  long long k = 0;
  const char *end = p + n;
  for (const char *q = p; (q = memmem(q, (size_t)(end - q), "\"id\":", 5)); q += 5) k++;
  return k;
}

static int name_is(const char *p, const char *end, const char *name) {
  size_t n = strlen(name);
  return (size_t)(end - p) >= n && strncasecmp(p, name, n) == 0;
}

/* The body's length from the head [line, head_end): content-length, -1 when chunked, 0 without either, -2 when bad. */
static long long body_length(const char *line, const char *head_end) {
  for (const char *p = line; p && p < head_end;) {
    const char *eol = memmem(p, (size_t)(head_end - p), "\r\n", 2);
    const char *stop = eol ? eol : head_end;
    if (name_is(p, stop, "content-length:")) {
      const char *q = p + 15;
      while (q < stop && (*q == ' ' || *q == '\t')) q++;
      long long len = 0;
      int digits = 0;
      for (; q < stop && *q >= '0' && *q <= '9' && digits < 15; q++, digits++) len = len * 10 + (*q - '0');
      return digits == 0 ? -2 : len;
    }
    if (name_is(p, stop, "transfer-encoding:"))
      for (const char *q = p + 18; q + 7 <= stop; q++)
        if (strncasecmp(q, "chunked", 7) == 0) return -1;
    p = eol ? eol + 2 : NULL;
  }
  return 0;
}

/* A chunked body from `at`: decoded into scratch; the offset past it, 0 when incomplete, -1 when bad. */
static long long chunked_end(const char *buf, size_t len, size_t at, size_t *body_len) {
  *body_len = 0;
  for (int guard = 0; guard < 1000000; guard++) {
    const char *eol = memmem(buf + at, len - at, "\r\n", 2);
    if (!eol) return 0;
    long long size = 0;
    int digits = 0;
    for (const char *q = buf + at; q < eol && hexval(*q) >= 0 && digits < 15; q++, digits++) size = size * 16 + hexval(*q);
    if (digits == 0) return -1;
    size_t data = (size_t)(eol - buf) + 2;
    if (len < data + (size_t)size + 2) return 0;
    if (size == 0) {
      const char *end = memmem(eol, len - (size_t)(eol - buf), "\r\n\r\n", 4);
      return end ? (long long)(end - buf) + 4 : 0;
    }
    scratch = grow(scratch, &scratch_cap, *body_len + (size_t)size);
    memcpy(scratch + *body_len, buf + data, (size_t)size);
    *body_len += (size_t)size;
    at = data + (size_t)size + 2;
  }
  return -1;
}

/* Handles the complete requests in c->in; keeps what is incomplete. */
static void handle_input(Conn *c) {
  size_t at = 0;
  while (!c->closing) {
    char *buf = c->in;
    char *end = memmem(buf + at, c->in_len - at, "\r\n\r\n", 4);
    if (!end) break;
    char *sp1 = memchr(buf + at, ' ', (size_t)(end - (buf + at)));
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - (sp1 + 1))) : NULL;
    char *line_end = memmem(buf + at, (size_t)(end + 2 - (buf + at)), "\r\n", 2);
    long long len = body_length(line_end + 2, end + 2);
    if (!sp2 || len == -2) {
      out_add(c, BAD, sizeof BAD - 1);
      c->closing = 1;
      break;
    }
    size_t body_at = (size_t)(end - buf) + 4, next, body_len;
    const char *body;
    if (len >= 0) {
      next = body_at + (size_t)len;
      if (c->in_len < next) break;
      body = buf + body_at;
      body_len = (size_t)len;
    } else {
      long long r = chunked_end(buf, c->in_len, body_at, &body_len);
      if (r == 0) break;
      if (r < 0) {
        out_add(c, BAD, sizeof BAD - 1);
        c->closing = 1;
        break;
      }
      next = (size_t)r;
      body = scratch;
    }
    const char *url = sp1 + 1;
    size_t url_len = (size_t)(sp2 - url);
    if (buf[at] == 'G')
      answer_get(c, url, url_len);
    else if (url_len >= 5 && memcmp(url, "/arc-", 5) == 0)
      out_add(c, ARC, sizeof ARC - 1);
    else {
      Stat *s = stat_for(url, url_len, 1);
      double t = now_ms();
      if (s->count == 0) s->first = t;
      s->count += url_len >= 7 && memcmp(url, "/batch-", 7) == 0 ? count_ids(body, body_len) : 1;
      s->last = t;
      out_add(c, OK, sizeof OK - 1);
    }
    at = next;
  }
  if (at > 0) {
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
  }
}

static void drop(Conn *c) {
  epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->in);
  free(c->out);
  free(c);
}

/* Writes what is queued; 0 when the connection is gone. */
static int flush_out(Conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
      epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
      return 1;
    }
    if (w < 0) {
      drop(c);
      return 0;
    }
    c->out_off += (size_t)w;
  }
  c->out_len = c->out_off = 0;
  if (c->closing) {
    drop(c);
    return 0;
  }
  return 1;
}

static void on_readable(Conn *c) {
  c->in = grow(c->in, &c->in_cap, c->in_len + 65536);
  ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return drop(c);
  c->in_len += (size_t)n;
  handle_input(c);
  if (c->out_len > 0) flush_out(c);
}

static void on_writable(Conn *c) {
  if (!flush_out(c)) return;
  if (c->out_len == 0) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
  }
}

int main(void) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  clock_gettime(CLOCK_MONOTONIC, &started);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1024) < 0) {
    perror("sink: listen");
    return 1;
  }
  socklen_t alen = sizeof addr;
  getsockname(lfd, (struct sockaddr *)&addr, &alen);
  epfd = epoll_create1(0);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &lev);
  printf("PORT %d\n", ntohs(addr.sin_port));
  fflush(stdout);
  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(epfd, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      perror("sink: epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      Conn *c = events[i].data.ptr;
      if (!c) {
        int fd;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          Conn *nc = calloc(1, sizeof *nc);
          nc->fd = fd;
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
          epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (events[i].events & EPOLLOUT)
        on_writable(c);
      else
        on_readable(c);
    }
  }
}
