package dev.tether.examples.boot;

import dev.tether.spring.TetherQueues;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /reports}: records the report and sends its rendering in one transaction, so that
 * a report is never recorded without its work, nor work sent for a report that was not recorded.
 */
@RestController
public class ReportController {
  private final JdbcTemplate jdbc;
  private final TetherQueues queues;

  /**
   * Creates the controller.
   *
   * @param jdbc the application's database
   * @param queues Tether's sender
   */
  public ReportController(JdbcTemplate jdbc, TetherQueues queues) {
    this.jdbc = jdbc;
    this.queues = queues;
  }

  /**
   * A report request.
   *
   * @param title the title
   * @param pages the page count
   */
  public record ReportRequest(String title, int pages) {}

  /**
   * Records a report and sends its rendering; with {@code failAfterSend} the transaction fails
   * after the send (a demonstration: nothing is recorded and nothing is sent).
   *
   * @param request the report
   * @param failAfterSend whether to fail after sending
   * @return the report's id and the message's id
   */
  @PostMapping("/reports")
  @ResponseStatus(HttpStatus.ACCEPTED)
  @Transactional
  public Map<String, Object> create(@RequestBody ReportRequest request,
      @RequestParam(name = "failAfterSend", defaultValue = "false") boolean failAfterSend) {
    long id = jdbc.queryForObject(
        "INSERT INTO reports (title, status) VALUES (?, 'requested') RETURNING id", Long.class, request.title());
    String messageId = queues.send("reports", new RenderReport(id, request.title(), request.pages()));
    if (failAfterSend) {
      throw new FailedAfterSend(id, messageId);
    }
    return Map.of("report", id, "message", messageId);
  }

  /** The demonstration's failure: the transaction rolls back after the message was sent in it. */
  static final class FailedAfterSend extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final long report;
    final String message;

    FailedAfterSend(long report, String message) {
      super("failing report " + report + " after sending message " + message + " in its transaction");
      this.report = report;
      this.message = message;
    }
  }

  /**
   * Answers the demonstration's failure with 409 and the ids that were rolled back.
   *
   * @param e the failure
   * @return the report's and the message's ids, neither of which exists any more
   */
  @ExceptionHandler(FailedAfterSend.class)
  @ResponseStatus(HttpStatus.CONFLICT)
  public Map<String, Object> rolledBack(FailedAfterSend e) {
    return Map.of("rolledBackReport", e.report, "rolledBackMessage", e.message);
  }
}
