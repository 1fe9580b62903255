package dev.tether.bench.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tether.Heartbeat;
import dev.tether.LeaseExtender;
import dev.tether.LeaseExtenderConfig;
import dev.tether.jdbc.JdbcMailbox;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.TetherStore;
import dev.tether.jdbc.TetherStoreConfig;
import dev.tether.jdbc.WorkItem;
import dev.tether.mailbox.Message;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Lease renewal load on PostgreSQL: {@code leases} in-flight messages (JdbcMailbox), each with its
 * own {@link Heartbeat} and a {@link LeaseExtender} (interval 1 s, extension 30 s), beaten every
 * 100 ms by its own thread (as a handler would) for {@code seconds}; counts the SQL statements the store executed
 * (every {@code execute*} and {@code commit} on its connections, through a counting DataSource)
 * and checks that no lease was lost. Group commit on and off in the same run.
 *
 * <p>With {@code tails} as third argument, it compares batched renewals without output and with
 * output tails in the same run: each message reports output ({@code Message#reportOutput}) whose
 * two 4,096-character tails change on every beat, so every extension carries them (the worst
 * case of the CLI worker's output tails).
 *
 * <p>Run: {@code java -cp tether-bench/target/benchmarks.jar dev.tether.bench.jdbc.RenewalLoad
 * [leases] [seconds] [tails]}; defaults 1000, 10.
 */
public final class RenewalLoad {
  private RenewalLoad() {}

  public static void main(String[] args) throws Exception {
    int leases = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
    if (args.length > 2 && args[2].equals("tails")) {
      for (boolean tails : new boolean[] {false, true, false, true}) {
        run(leases, seconds, true, tails);
      }
      return;
    }
    for (boolean batched : new boolean[] {true, false, true}) {
      run(leases, seconds, batched, false);
    }
  }

  private static void run(int leases, int seconds, boolean batched, boolean tails) throws Exception {
    BenchSchema schema = BenchSchema.create("tether_renew_");
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(schema.url());
    hc.setMaximumPoolSize(10);
    AtomicLong statements = new AtomicLong();
    try (HikariDataSource pool = new HikariDataSource(hc);
        TetherStore store = TetherStore.open(counting(pool, statements),
            TetherStoreConfig.builder().groupCommit(batched).build())) {
      JdbcMailbox<String, String> box = JdbcMailbox.ofStrings(store, "renew");
      List<NewWorkItem> items = new ArrayList<>();
      for (int i = 0; i < leases; i++) {
        items.add(NewWorkItem.of("renew", "job"));
      }
      new LeaseManager(store, "producer").enqueueAll(items);
      List<Message<String, String>> inFlight = new ArrayList<>();
      while (inFlight.size() < leases) {
        inFlight.addAll(box.receive(10, Duration.ofSeconds(30), Duration.ZERO));
      }
      LeaseExtenderConfig config = LeaseExtenderConfig.of(Duration.ofSeconds(1), Duration.ofSeconds(30));
      List<Heartbeat> hearts = new ArrayList<>();
      List<LeaseExtender.Attachment> attached = new ArrayList<>();
      AtomicLong written = new AtomicLong();
      for (Message<String, String> m : inFlight) {
        Heartbeat h = new Heartbeat();
        hearts.add(h);
        if (tails) {
          AtomicLong bytes = new AtomicLong();
          h.addCallback(() -> bytes.incrementAndGet()); // new output on every beat
          String base = "x".repeat(dev.tether.mailbox.OutputTail.MAX_CHARS - 20);
          m.reportOutput(() -> {
            long n = bytes.get();
            String out = base + String.format(Locale.ROOT, "%020d", n);
            written.addAndGet(2L * out.length());
            return new dev.tether.mailbox.OutputTail(out, out, n, Duration.ZERO, Duration.ZERO);
          });
        }
        attached.add(new LeaseExtender(config).attach(m, h)); // one extender per message
      }
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> beaters = new ArrayList<>();
      int threads = leases; // one handler thread per in-flight item, as in a worker
      for (int t = 0; t < threads; t++) {
        int from = t * leases / threads;
        int to = (t + 1) * leases / threads;
        Thread th = new Thread(() -> {
          while (!stop.get()) {
            long start = System.nanoTime();
            for (int i = from; i < to; i++) {
              hearts.get(i).beat();
            }
            long sleep = 100 - (System.nanoTime() - start) / 1_000_000;
            if (sleep > 0) {
              try {
                Thread.sleep(sleep);
              } catch (InterruptedException e) {
                return;
              }
            }
          }
        }, "beater-" + t);
        th.setDaemon(true);
        th.start();
        beaters.add(th);
      }
      Thread.sleep(1500); // first extensions come due after 1 s: measure the steady state
      long s0 = statements.get();
      long e0 = extensions(attached);
      long w0 = written.get();
      long t0 = System.nanoTime();
      Thread.sleep(seconds * 1000L);
      long s1 = statements.get();
      long e1 = extensions(attached);
      long w1 = written.get();
      double secs = (System.nanoTime() - t0) / 1e9;
      stop.set(true);
      for (Thread th : beaters) {
        th.join();
      }
      int lost = 0;
      for (LeaseExtender.Attachment a : attached) {
        if (a.isLeaseLost()) {
          lost++;
        }
      }
      LeaseManager check = new LeaseManager(store, "check");
      int held = 0;
      for (Message<String, String> m : inFlight) {
        WorkItem w = check.find(Long.parseLong(m.id())).orElseThrow();
        if (w.leaseExpiresAt() != null && w.deliveryCount() == 1) {
          held++;
        }
      }
      System.out.printf(Locale.ROOT,
          "renewals %s%s: %d leases beaten every 100 ms, interval 1 s: %.0f extensions/s, %.0f statements/s"
              + " (%.2f per extension), tail characters carried %.0f per extension, leases lost %d,"
              + " still held on first delivery %d of %d%n",
          batched ? "batched (groupCommit=true)" : "one transaction each (groupCommit=false)",
          tails ? " with output tails" : "", leases, (e1 - e0) / secs, (s1 - s0) / secs,
          (s1 - s0) / (double) Math.max(1, e1 - e0), (w1 - w0) / (double) Math.max(1, e1 - e0),
          lost, held, leases);
      for (LeaseExtender.Attachment a : attached) {
        a.close();
      }
    } finally {
      schema.close();
    }
  }

  private static long extensions(List<LeaseExtender.Attachment> attached) {
    long n = 0;
    for (LeaseExtender.Attachment a : attached) {
      n += a.extensions();
    }
    return n;
  }

  /** A DataSource whose connections count every statement execution and commit. */
  private static DataSource counting(DataSource ds, AtomicLong counter) {
    return new DataSource() {
      @Override
      public Connection getConnection() throws SQLException {
        return wrap(ds.getConnection(), counter);
      }

      @Override
      public Connection getConnection(String user, String password) throws SQLException {
        return wrap(ds.getConnection(user, password), counter);
      }

      @Override
      public PrintWriter getLogWriter() throws SQLException {
        return ds.getLogWriter();
      }

      @Override
      public void setLogWriter(PrintWriter out) throws SQLException {
        ds.setLogWriter(out);
      }

      @Override
      public void setLoginTimeout(int seconds) throws SQLException {
        ds.setLoginTimeout(seconds);
      }

      @Override
      public int getLoginTimeout() throws SQLException {
        return ds.getLoginTimeout();
      }

      @Override
      public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return ds.getParentLogger();
      }

      @Override
      public <T> T unwrap(Class<T> iface) throws SQLException {
        return ds.unwrap(iface);
      }

      @Override
      public boolean isWrapperFor(Class<?> iface) throws SQLException {
        return ds.isWrapperFor(iface);
      }
    };
  }

  private static Connection wrap(Connection c, AtomicLong counter) {
    InvocationHandler h = (proxy, method, args) -> {
      try {
        Object r = method.invoke(c, args);
        String name = method.getName();
        if (name.equals("commit")) {
          counter.incrementAndGet();
        }
        if (r instanceof Statement) {
          return wrapStatement((Statement) r, counter);
        }
        return r;
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return (Connection) Proxy.newProxyInstance(RenewalLoad.class.getClassLoader(), new Class<?>[] {Connection.class}, h);
  }

  private static Statement wrapStatement(Statement s, AtomicLong counter) {
    List<Class<?>> ifaces = new ArrayList<>();
    for (Class<?> i : new Class<?>[] {java.sql.CallableStatement.class, java.sql.PreparedStatement.class, Statement.class}) {
      if (i.isInstance(s)) {
        ifaces.add(i);
        break;
      }
    }
    InvocationHandler h = (proxy, method, args) -> {
      String name = method.getName();
      if (name.startsWith("execute")) {
        counter.incrementAndGet();
      }
      try {
        return method.invoke(s, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return (Statement) Proxy.newProxyInstance(RenewalLoad.class.getClassLoader(), ifaces.toArray(new Class<?>[0]), h);
  }
}
