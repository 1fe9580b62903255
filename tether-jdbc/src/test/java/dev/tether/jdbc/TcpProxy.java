package dev.tether.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A TCP forwarder on a free local port to a database server, for tests of outages without
 * stopping the shared server: {@link #cut()} closes every forwarded connection and closes new
 * ones at once (as a server that went away), {@link #freeze()} keeps connections open but drops
 * every byte (as a server or network that stopped answering), {@link #restore()} forwards again.
 * Daemon threads: one accepting, two per connection.
 */
public final class TcpProxy implements AutoCloseable {
  private static final Pattern HOST_PORT = Pattern.compile("//([^/:?]+)(?::(\\d+))?/");

  private final String targetHost;
  private final int targetPort;
  private final ServerSocket server;
  private final Object lock = new Object();
  private final List<Socket> open = new ArrayList<>(); // guarded by lock
  private boolean cut; // guarded by lock
  private volatile boolean frozen;

  /**
   * Forwards to the host and port of a JDBC URL such as {@code jdbc:postgresql://host:5432/db}.
   *
   * @param jdbcUrl the URL whose server to forward to (port 5432 when it names none)
   */
  public TcpProxy(String jdbcUrl) {
    Matcher m = HOST_PORT.matcher(jdbcUrl);
    if (!m.find()) {
      throw new IllegalArgumentException("no //host:port/ in " + jdbcUrl);
    }
    this.targetHost = m.group(1);
    this.targetPort = m.group(2) == null ? 5432 : Integer.parseInt(m.group(2));
    try {
      this.server = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Thread accepting = new Thread(this::accept, "test-proxy-accept");
    accepting.setDaemon(true);
    accepting.start();
  }

  /**
   * Returns {@code jdbcUrl} with its host and port replaced by this proxy's.
   *
   * @param jdbcUrl a URL naming the proxied server
   * @return the same URL through the proxy
   */
  public String url(String jdbcUrl) {
    return HOST_PORT.matcher(jdbcUrl).replaceFirst("//127.0.0.1:" + server.getLocalPort() + "/");
  }

  /** Closes every forwarded connection; new ones are closed as soon as they are accepted. */
  public void cut() {
    synchronized (lock) {
      cut = true;
      for (Socket s : open) {
        closeQuietly(s);
      }
      open.clear();
    }
  }

  /** Keeps every connection open, accepts new ones, and drops every byte in both directions. */
  public void freeze() {
    frozen = true;
  }

  /** Forwards again (new connections after a cut; bytes after a freeze). */
  public void restore() {
    synchronized (lock) {
      cut = false;
    }
    frozen = false;
  }

  @Override
  public void close() {
    cut();
    closeQuietly(server);
  }

  private void accept() {
    while (!server.isClosed()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      Socket upstream;
      try {
        upstream = new Socket(targetHost, targetPort);
      } catch (IOException e) {
        closeQuietly(client);
        continue;
      }
      synchronized (lock) { // checked with the registration, so that a cut() closes them or they are never used
        if (cut) {
          closeQuietly(client);
          closeQuietly(upstream);
          continue;
        }
        open.add(client);
        open.add(upstream);
      }
      pump(client, upstream);
      pump(upstream, client);
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (!frozen) {
            out.write(buf, 0, n);
            out.flush();
          }
        }
      } catch (IOException e) {
        // cut or closed by either side
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        synchronized (lock) {
          open.remove(from);
          open.remove(to);
        }
      }
    }, "test-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // closing anyway
    }
  }
}
