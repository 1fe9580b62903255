package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tether.cli.internal.CommandSpec;
import dev.tether.cli.internal.Dashboard;
import dev.tether.cli.internal.Worker;
import dev.tether.cli.internal.WorkerMetrics;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;

/**
 * The dashboard in a real headless Chromium, through the system chromedriver (never a download):
 * no console errors, an in-flight item whose heartbeat age and lease time change, item text shown
 * as text, requeue refused without the token and done with it, keyset paging, filters, deep links
 * to an item loaded fresh, the fleet table, and a 66 KB command that never pushes the page off
 * screen. Saves {@code target/dashboard.png}.
 *
 * <p>Chromium and chromedriver are Debian's ({@code /usr/bin/chromium}, {@code
 * /usr/bin/chromedriver}; other paths with {@code -Dtether.chromium=...} and {@code
 * -Dtether.chromedriver=...}). Before the integration tests, Maven runs {@code
 * src/test/scripts/ensure-debian-packages.sh}, which installs them when missing and it can.
 */
@Timeout(120)
class DashboardBrowserIT {
  private static final String CHROMEDRIVER =
      System.getProperty("tether.chromedriver", "/usr/bin/chromedriver");
  private static final String CHROMIUM = System.getProperty("tether.chromium", "/usr/bin/chromium");
  private static final String TOKEN = "browser-test-token";

  @TempDir Path dir;
  private TetherStore store;
  private Worker worker;
  private int port;
  private WebDriver driver;

  /** Fails the class once, before any test, when Chromium or chromedriver is missing. */
  @BeforeAll
  static void requireChromium() {
    if (!new File(CHROMEDRIVER).canExecute() || !new File(CHROMIUM).canExecute()) {
      throw new AssertionError(
          "headless Chromium and its chromedriver are needed for the dashboard test, and"
              + " ensure-debian-packages.sh could not install them (see its lines in the build log):"
              + " install them, on Debian as root with 'apt-get update && apt-get install -y chromium"
              + " chromium-driver' (expected " + CHROMIUM + " and " + CHROMEDRIVER + ")");
    }
  }

  @BeforeEach
  void start() {
    store = TetherStore.open(dir.resolve("b.db").toString());
    worker =
        new Worker(store, new Worker.Config("web", 2, Duration.ofSeconds(5), Duration.ofMillis(300),
            Duration.ofSeconds(4), Duration.ofSeconds(1), 4096, Duration.ofSeconds(5), null),
            new WorkerMetrics());
  }

  @AfterEach
  void stop() {
    if (driver != null) {
      driver.quit();
    }
    worker.stop(Duration.ofSeconds(5));
    store.close();
  }

  private WebDriver chromium() throws Exception {
    System.setProperty("webdriver.chrome.driver", CHROMEDRIVER);
    Path profile = Files.createTempDirectory(dir, "chromium-profile");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM);
    options.addArguments(
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--window-size=1400,1600", "--user-data-dir=" + profile);
    options.setCapability("goog:loggingPrefs", Map.of("browser", "ALL"));
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER)).usingAnyFreePort().build();
    return new ChromeDriver(service, options);
  }

  private long enqueue(String queue, String script, int maxAttempts) {
    return new LeaseManager(store, "it").enqueue(
        NewWorkItem.builder(queue)
            .input(new CommandSpec(List.of(script), true, "output", Map.of()).toJson())
            .maxAttempts(maxAttempts)
            .build());
  }

  /** Clicks, finding the element again if a refresh replaced it in between. */
  private void click(String css) {
    await().atMost(Duration.ofSeconds(5)).ignoreException(StaleElementReferenceException.class)
        .until(() -> {
          driver.findElement(By.cssSelector(css)).click();
          return true;
        });
  }

  private String cell(long id, String cls) {
    return driver.findElement(By.cssSelector("#inflight tr[data-id='" + id + "'] td." + cls)).getText();
  }

  @Test
  void dashboardShowsLiveLeasesEscapesItemTextAndGuardsRequeueWithTheToken() throws Exception {
    // a failed item on a queue no worker serves, with hostile text in its command and error
    LeaseManager lm = new LeaseManager(store, "it");
    long failed = enqueue("other", "echo '<img src=x onerror=window.pwned=1>'", 1);
    var lease = lm.acquire("other", Duration.ofSeconds(30)).orElseThrow();
    lm.release(lease.itemId(), lease.token(), false, null, "exit status 1: <b id=injected>boom</b>");
    long chatty = enqueue("web", "for i in $(seq 1 200); do echo tick $i; sleep 0.2; done", 3);
    Dashboard dashboard = new Dashboard(store, TOKEN, worker, new WorkerMetrics());
    worker.start(new Worker.Health("127.0.0.1", 0, dashboard.routes()), false);
    port = worker.healthAddress().orElseThrow().getPort();

    driver = chromium();
    // without the token the page shows nothing of the store
    driver.get("http://127.0.0.1:" + port + "/");
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> driver.findElement(By.id("updated")).getText(), t -> t.contains("enter the token printed at start"));
    assertThat(driver.findElements(By.cssSelector("#inflight tr[data-id]"))).isEmpty();
    // the link a worker prints gives the page its token, which then leaves the address bar
    driver.get("http://127.0.0.1:" + port + "/#token=" + TOKEN);
    await().atMost(Duration.ofSeconds(5)).until(() -> !driver.getCurrentUrl().contains("token"));

    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> !driver.findElements(By.cssSelector("#inflight tr[data-id='" + chatty + "']")).isEmpty());
    WebElement row = driver.findElement(By.cssSelector("#inflight tr[data-id='" + chatty + "']"));
    String age1 = cell(chatty, "hb-age");
    String left1 = cell(chatty, "lease-left");
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> !cell(chatty, "hb-age").equals(age1));
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> !cell(chatty, "lease-left").equals(left1));
    assertThat(cell(chatty, "lease-left")).doesNotStartWith("-");
    // the live refresh updates the row in place instead of replacing it
    assertThat(row.getAttribute("data-id")).isEqualTo(Long.toString(chatty));

    // item text is text, never markup
    WebElement failedRow = driver.findElement(By.cssSelector("#failed tr[data-id='" + failed + "']"));
    assertThat(failedRow.getText()).contains("<b id=injected>boom</b>").contains("<img src=x onerror=window.pwned=1>");
    assertThat(driver.findElements(By.id("injected"))).isEmpty();
    assertThat(driver.findElements(By.cssSelector("#failed img, #items img"))).isEmpty();
    assertThat(((org.openqa.selenium.JavascriptExecutor) driver).executeScript("return window.pwned === undefined")).isEqualTo(true);

    // the item's history opens on click
    click("#failed tr[data-id='" + failed + "'] a.id");
    await().atMost(Duration.ofSeconds(5)).until(() -> driver.findElement(By.id("item")).isDisplayed());
    assertThat(driver.findElement(By.id("item-checkpoints")).getText()).contains("released_failed");

    // requeue without a token is refused (401), with a wrong one too (403)
    WebElement message = driver.findElement(By.id("message"));
    WebElement token = driver.findElement(By.id("token"));
    token.clear();
    token.sendKeys(Keys.TAB);
    click("#failed button.requeue[data-id='" + failed + "']");
    await().atMost(Duration.ofSeconds(5)).until(() -> message.getText().contains("401"));
    token.sendKeys("not-the-token", Keys.TAB);
    click("#failed button.requeue[data-id='" + failed + "']");
    await().atMost(Duration.ofSeconds(5)).until(() -> message.getText().contains("403"));
    assertThat(lm.find(failed).orElseThrow().status().dbValue()).isEqualTo("failed");

    // with the token it works
    token.clear();
    token.sendKeys(TOKEN, Keys.TAB);
    click("#failed button.requeue[data-id='" + failed + "']");
    await().atMost(Duration.ofSeconds(5)).until(() -> message.getText().contains("done"));
    assertThat(lm.find(failed).orElseThrow().status().dbValue()).isEqualTo("pending");

    File shot = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE);
    Path target = Path.of(System.getProperty("tether.screenshot", "target/dashboard.png"));
    Files.createDirectories(target.toAbsolutePath().getParent());
    Files.copy(shot.toPath(), target, StandardCopyOption.REPLACE_EXISTING);

    List<LogEntry> severe =
        driver.manage().logs().get(LogType.BROWSER).getAll().stream()
            .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
            // the refused reads and requeues are expected 401/403 responses, logged by Chromium as
            // failed loads
            .filter(e -> !e.getMessage().matches(".*/api/(requeue|state|throughput|item)[^ ]* - Failed to load resource: the server responded with a status of 40[13].*"))
            .collect(Collectors.toList());
    assertThat(severe).as("browser console errors: %s",
        severe.stream().map(LogEntry::getMessage).collect(Collectors.joining("\n"))).isEmpty();
  }

  private long enqueueArgv(String queue, List<String> argv, boolean shell, int maxAttempts) {
    return new LeaseManager(store, "it").enqueue(
        NewWorkItem.builder(queue)
            .input(new CommandSpec(argv, shell, "output", Map.of()).toJson())
            .maxAttempts(maxAttempts)
            .build());
  }

  private String itemText(String id) {
    return driver.findElement(By.id(id)).getText();
  }

  @Test
  void scriptTagCommandsAndInvalidUtf8OutputRenderAsInertTextWithReplacementCharacters()
      throws Exception {
    String script = "<script>window.pwned=1</script>";
    // a command that is literally the script tag (no shell: it cannot start, so it fails)
    long literal = enqueueArgv("web", List.of(script), false, 1);
    // a command that prints the script tag on stdout and succeeds
    long echoed = enqueueArgv("web", List.of("echo", script), false, 1);
    // bytes 0xFF 0xFE are not UTF-8: once on stdout (success), once on stderr (failure)
    long badOut = enqueueArgv("web", List.of("printf '\\377\\376abc'"), true, 1);
    long badErr = enqueueArgv("web", List.of("printf '\\377\\376oops' >&2; exit 3"), true, 1);
    Dashboard dashboard = new Dashboard(store, TOKEN, worker, new WorkerMetrics());
    worker.start(new Worker.Health("127.0.0.1", 0, dashboard.routes()), false);
    port = worker.healthAddress().orElseThrow().getPort();
    LeaseManager lm = new LeaseManager(store, "it");
    await().atMost(Duration.ofSeconds(30)).until(() ->
        List.of(literal, echoed, badOut, badErr).stream()
            .allMatch(id -> List.of("completed", "failed").contains(lm.find(id).orElseThrow().status().dbValue())));
    assertThat(lm.find(literal).orElseThrow().status().dbValue()).isEqualTo("failed");
    assertThat(lm.find(echoed).orElseThrow().status().dbValue()).isEqualTo("completed");
    assertThat(lm.find(badOut).orElseThrow().status().dbValue()).isEqualTo("completed");
    assertThat(lm.find(badErr).orElseThrow().status().dbValue()).isEqualTo("failed");

    driver = chromium();
    driver.get("http://127.0.0.1:" + port + "/#token=" + TOKEN);
    org.openqa.selenium.JavascriptExecutor js = (org.openqa.selenium.JavascriptExecutor) driver;
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> !driver.findElements(By.cssSelector("#items tr[data-id='" + badErr + "']")).isEmpty());

    // the script tag is shown as text in the recent and failed tables, and never runs
    assertThat(driver.findElement(By.cssSelector("#items tr[data-id='" + literal + "']")).getText()).contains(script);
    assertThat(driver.findElement(By.cssSelector("#items tr[data-id='" + echoed + "']")).getText()).contains(script);
    assertThat(driver.findElement(By.cssSelector("#failed tr[data-id='" + literal + "']")).getText()).contains(script);
    assertThat(driver.findElements(By.tagName("script"))).as("only the page's own script").hasSize(1);
    assertThat(js.executeScript("return window.pwned === undefined")).isEqualTo(true);

    // the failed command's error shows its non-UTF-8 stderr with U+FFFD
    assertThat(driver.findElement(By.cssSelector("#failed tr[data-id='" + badErr + "']")).getText())
        .contains("exit status 3").contains("\uFFFD\uFFFDoops");

    // item views: stdout with U+FFFD, the echoed script as text
    click("#items tr[data-id='" + badOut + "'] a.id");
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions()
        .until(() -> itemText("item-id").equals("#" + badOut) && itemText("item-stdout").contains("abc"));
    assertThat(itemText("item-stdout")).isEqualTo("\uFFFD\uFFFDabc");
    click("#items tr[data-id='" + echoed + "'] a.id");
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions()
        .until(() -> itemText("item-id").equals("#" + echoed) && itemText("item-stdout").contains("script"));
    assertThat(itemText("item-stdout")).isEqualTo(script);
    click("#failed tr[data-id='" + literal + "'] a.id");
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions()
        .until(() -> itemText("item-id").equals("#" + literal));
    assertThat(driver.findElement(By.id("item-fields")).getText()).contains(script);
    Thread.sleep(1500); // at least one live refresh with all of it on the page
    assertThat(driver.findElements(By.tagName("script"))).hasSize(1);
    assertThat(js.executeScript("return window.pwned === undefined")).isEqualTo(true);

    List<LogEntry> severe =
        driver.manage().logs().get(LogType.BROWSER).getAll().stream()
            .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
            .collect(Collectors.toList());
    assertThat(severe).as("browser console errors: %s",
        severe.stream().map(LogEntry::getMessage).collect(Collectors.joining("\n"))).isEmpty();
  }

  @Test
  void theItemViewShowsTheOutputOfEachDeliveryOfAHungItem() throws Exception {
    // two deliveries that printed, then went silent until their leases expired (written through
    // the store's API, so that the page is tested whatever the machine's load does to timing)
    LeaseManager lm = new LeaseManager(store, "it");
    long hung = enqueue("other", "echo connecting; sleep 600", 2);
    for (int d = 1; d <= 2; d++) {
      dev.tether.jdbc.Lease lease = lm.acquire("other", Duration.ofMillis(300)).orElseThrow();
      lm.recordOutput(lease.itemId(), lease.token(), new dev.tether.mailbox.OutputTail(
          "connecting " + d + "\n", "step " + d + " done\n", 20 + d, Duration.ZERO, Duration.ZERO));
      dev.tether.jdbc.RecoverySweep sweep = new dev.tether.jdbc.RecoverySweep(store);
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> {
        sweep.scanAndRecover();
        return !lm.find(hung).orElseThrow().status().dbValue().equals("in_progress");
      });
    }
    assertThat(lm.find(hung).orElseThrow().status().dbValue()).isEqualTo("failed");
    Dashboard dashboard = new Dashboard(store, TOKEN, worker, new WorkerMetrics());
    worker.start(new Worker.Health("127.0.0.1", 0, dashboard.routes()), false);
    port = worker.healthAddress().orElseThrow().getPort();

    driver = chromium();
    driver.get("http://127.0.0.1:" + port + "/#token=" + TOKEN);
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> !driver.findElements(By.cssSelector("#failed tr[data-id='" + hung + "']")).isEmpty());
    click("#failed tr[data-id='" + hung + "'] a.id");
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> itemText("item-id").equals("#" + hung)
            && driver.findElements(By.cssSelector("#item-outputs .delivery-output")).size() == 2);
    List<String> blocks = driver.findElements(By.cssSelector("#item-outputs .delivery-output")).stream()
        .map(e -> e.getText()).collect(Collectors.toList());
    assertThat(blocks.get(0)).contains("delivery 1 (lease_expired)").contains("connecting 1")
        .contains("step 1 done");
    assertThat(blocks.get(1)).contains("delivery 2 (lease_expired)").contains("connecting 2")
        .contains("step 2 done");
    assertThat(itemText("item-result")).isEqualTo("no result stored");
    assertThat(itemText("item-stdout")).isEqualTo("connecting 2");
    assertThat(itemText("item-stderr")).isEqualTo("step 2 done");
  }

  private List<String> rowIds(String table) {
    return driver.findElements(By.cssSelector("#" + table + " tbody tr[data-id]")).stream()
        .map(e -> e.getAttribute("data-id")).collect(Collectors.toList());
  }

  private static List<String> newest(List<Long> ids, int from, int n) {
    List<Long> sorted = new java.util.ArrayList<>(ids);
    sorted.sort(java.util.Comparator.reverseOrder());
    return sorted.subList(from, Math.min(sorted.size(), from + n)).stream().map(String::valueOf)
        .collect(Collectors.toList());
  }

  @Test
  void pagesFiltersDeepLinksTheFleetAndALongCommandThatStaysOnScreen() throws Exception {
    List<Long> ids = new java.util.ArrayList<>();
    for (int i = 0; i < 44; i++) {
      ids.add(enqueue("bulk", "echo bulk " + i, 1));
    }
    long needle = enqueue("special", "echo needle-42", 1);
    ids.add(needle);
    String huge = "echo " + "y".repeat(66_000);
    long big = enqueue("bulk", huge, 1);
    ids.add(big);
    // a worker registered five minutes ago that never refreshed: gone
    new dev.tether.jdbc.WorkerRegistry(store, java.time.Clock.offset(java.time.Clock.systemUTC(),
        Duration.ofMinutes(-5))).register(new dev.tether.jdbc.WorkerInfo.Registration("ghost:1", "ghost-host", 1,
            "0.0.1", List.of("bulk"), 1, 1), Duration.ofSeconds(10));
    Dashboard dashboard = new Dashboard(store, TOKEN, worker, new WorkerMetrics());
    worker.start(new Worker.Health("127.0.0.1", 0, dashboard.routes()), false);
    port = worker.healthAddress().orElseThrow().getPort();
    String base = "http://127.0.0.1:" + port + "/";
    driver = chromium();
    org.openqa.selenium.JavascriptExecutor js = (org.openqa.selenium.JavascriptExecutor) driver;

    // a deep link loaded fresh opens the item: ?item=ID, then #item=ID
    driver.get(base + "?item=" + needle + "#token=" + TOKEN);
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> driver.findElement(By.id("item")).isDisplayed() && itemText("item-id").equals("#" + needle));
    assertThat(driver.findElement(By.id("item-fields")).getText()).contains("echo needle-42").contains("special");
    driver.get("about:blank");
    driver.get(base + "#item=" + big);
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> driver.findElement(By.id("item")).isDisplayed() && itemText("item-id").equals("#" + big));
    // the 66 KB command is in the item view, wrapped in a box of its own: nothing is wider than the window
    WebElement command = driver.findElement(By.cssSelector("#item-fields tr[data-id='command'] .long"));
    assertThat(((Number) js.executeScript("return arguments[0].textContent.length", command)).intValue())
        .isGreaterThan(66_000);
    assertThat(command.getSize().getHeight()).isLessThan(400);
    assertThat(((Number) js.executeScript("return document.documentElement.scrollWidth")).intValue())
        .isLessThanOrEqualTo(((Number) js.executeScript("return window.innerWidth")).intValue());

    // the fleet: this process's worker alive, the silent one gone
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> rowIds("workers").containsAll(List.of(worker.workerId(), "ghost:1")));
    assertThat(driver.findElement(By.cssSelector("#workers tr[data-id='" + worker.workerId() + "'] td.state")).getText())
        .isEqualTo("alive");
    assertThat(driver.findElement(By.cssSelector("#workers tr[data-id='ghost:1'] td.state")).getText())
        .isEqualTo("gone");
    assertThat(driver.findElement(By.cssSelector("#workers tr[data-id='" + worker.workerId() + "']")).getText())
        .contains("web").contains(Long.toString(ProcessHandle.current().pid()));

    // keyset paging: 46 items, 20 a page, newest first; the long command is cut in the list
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> rowIds("items").equals(newest(ids, 0, 20)));
    String bigRow = driver.findElement(By.cssSelector("#items tr[data-id='" + big + "'] td.cmd")).getText();
    assertThat(bigRow.length()).isLessThan(200);
    assertThat(bigRow).startsWith("echo yyyy");
    assertThat(((Number) js.executeScript("return document.documentElement.scrollWidth")).intValue())
        .isLessThanOrEqualTo(((Number) js.executeScript("return window.innerWidth")).intValue());
    click("#older");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> rowIds("items").equals(newest(ids, 20, 20)));
    assertThat(itemText("page-info")).isEqualTo("page 2");
    click("#older");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> rowIds("items").equals(newest(ids, 40, 20)));
    assertThat(driver.findElement(By.id("older")).isEnabled()).isFalse();
    click("#newer");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> rowIds("items").equals(newest(ids, 20, 20)));

    // filters: a queue, then a text in the command; each starts again at page 1
    new org.openqa.selenium.support.ui.Select(driver.findElement(By.id("f-queue"))).selectByValue("special");
    click("#f-apply");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> rowIds("items").equals(List.of(Long.toString(needle))));
    assertThat(itemText("page-info")).isEqualTo("page 1");
    click("#f-clear");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> rowIds("items").equals(newest(ids, 0, 20)));
    driver.findElement(By.id("f-text")).sendKeys("bulk 7");
    click("#f-apply");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> rowIds("items").equals(List.of(Long.toString(ids.get(7)))));

    // the queue counts and the throughput chart are there
    assertThat(driver.findElement(By.cssSelector("#queues tr[data-id='bulk']")).getText()).contains("45");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> !driver.findElements(By.cssSelector("#chart svg polyline.series-completed")).isEmpty());

    File shot = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE);
    Path target = Path.of(System.getProperty("tether.screenshot.fleet", "target/dashboard-fleet.png"));
    Files.createDirectories(target.toAbsolutePath().getParent());
    Files.copy(shot.toPath(), target, StandardCopyOption.REPLACE_EXISTING);
    List<LogEntry> severe =
        driver.manage().logs().get(LogType.BROWSER).getAll().stream()
            .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
            .collect(Collectors.toList());
    assertThat(severe).as("browser console errors: %s",
        severe.stream().map(LogEntry::getMessage).collect(Collectors.joining("\n"))).isEmpty();
  }

  @Test
  void aMillionItemStoreShowsCappedCountsAndPagesWithoutReadingItAll() throws Exception {
    // one bulk insert (the store's own enqueue would take minutes here): 1,000,000 items in two
    // queues, 90% completed, 9% pending, 1% failed; the newest has a 66 KB command
    try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("b.db"));
        java.sql.Statement st = c.createStatement()) {
      long now = System.currentTimeMillis();
      st.executeUpdate("WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 1000000)"
          + " INSERT INTO tether_work_items (queue, status, priority, delivery_count, attempts, max_attempts,"
          + " available_at, input_data, error_message, created_at, completed_at, updated_at, scheduled)"
          + " SELECT CASE x % 2 WHEN 0 THEN 'bulk' ELSE 'other' END,"
          + " CASE WHEN x % 100 < 90 THEN 'completed' WHEN x % 100 < 99 THEN 'pending' ELSE 'failed' END, 0,"
          + " CASE WHEN x % 100 < 90 OR x % 100 = 99 THEN 1 ELSE 0 END,"
          + " CASE WHEN x % 100 < 90 OR x % 100 = 99 THEN 1 ELSE 0 END, 1, " + now + ","
          + " CAST('{\"argv\":[\"echo job ' || x || '\"],\"shell\":true}' AS BLOB),"
          + " CASE WHEN x % 100 = 99 THEN 'failed on attempt 1 of 1: exit status 1' END,"
          + " " + now + " - (1000000 - x) * 3, CASE WHEN x % 100 < 90 OR x % 100 = 99 THEN " + now
          + " - (1000000 - x) * 3 END, " + now + ", FALSE FROM g");
      st.execute("ANALYZE");
    }
    long newest = 1_000_000;
    new LeaseManager(store, "it").enqueue(NewWorkItem.builder("bulk")
        .input(new CommandSpec(List.of("echo " + "z".repeat(66_000)), true, "output", Map.of()).toJson()).build());
    long big = newest + 1;
    Dashboard dashboard = new Dashboard(store, TOKEN, worker, new WorkerMetrics());
    worker.start(new Worker.Health("127.0.0.1", 0, dashboard.routes()), false);
    port = worker.healthAddress().orElseThrow().getPort();
    driver = chromium();
    org.openqa.selenium.JavascriptExecutor js = (org.openqa.selenium.JavascriptExecutor) driver;
    driver.get("http://127.0.0.1:" + port + "/#token=" + TOKEN);

    // counts stop at the cap: 1,000+ in every column past it
    await().atMost(Duration.ofSeconds(30)).ignoreExceptions()
        .until(() -> driver.findElement(By.cssSelector("#queues tr[data-id='bulk'] td.completed")).getText().equals("1,000+"));
    assertThat(driver.findElement(By.cssSelector("#queues tr[data-id='bulk'] td.pending")).getText()).isEqualTo("1,000+");
    assertThat(driver.findElement(By.cssSelector("#queues tr[data-id='other'] td.failed")).getText()).isEqualTo("1,000+");
    assertThat(driver.findElement(By.cssSelector("#queues tr[data-id='bulk'] td.in_progress")).getText()).isEqualTo("0");
    // the newest page first, the 66 KB command cut to a line, the page no wider than the window
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> rowIds("items").get(0).equals(Long.toString(big)));
    assertThat(rowIds("items")).hasSize(20).element(1).isEqualTo(Long.toString(newest));
    assertThat(((Number) js.executeScript("return document.documentElement.scrollWidth")).intValue())
        .isLessThanOrEqualTo(((Number) js.executeScript("return window.innerWidth")).intValue());
    click("#older");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> rowIds("items").get(0).equals(Long.toString(newest - 19)));
    // a filter deep in the store: failed items of queue 'other', newest first
    new org.openqa.selenium.support.ui.Select(driver.findElement(By.id("f-queue"))).selectByValue("other");
    new org.openqa.selenium.support.ui.Select(driver.findElement(By.id("f-status"))).selectByValue("failed");
    click("#f-apply");
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
        .until(() -> rowIds("items").get(0).equals("999999") && rowIds("items").size() == 20);
    assertThat(rowIds("items").get(1)).isEqualTo("999899");
    // an old item by deep link, loaded fresh
    driver.get("http://127.0.0.1:" + port + "/#item=3");
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> itemText("item-id").equals("#3") && driver.findElement(By.id("item")).isDisplayed());
    assertThat(driver.findElement(By.id("item-fields")).getText()).contains("echo job 3");
  }
}
