package dev.tether.examples.boot;

import dev.tether.loop.WorkContext;
import dev.tether.loop.WorkStoppedException;
import dev.tether.spring.TetherHandler;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Renders reports page by page. Each page is proof of work: the handler beats after it, so the
 * lease is extended for as long as pages keep coming, however long the report, and a worker
 * that hangs loses the report to another after the visibility timeout. The last page done is a
 * checkpoint: a report whose worker died, or was stopped at the end of the application's drain
 * timeout, resumes after it.
 */
@Component
public class RenderReportHandler implements TetherHandler<RenderReport, RenderedReport> {
  private final JdbcTemplate jdbc;
  private final Duration pageTime;

  /**
   * Creates the handler.
   *
   * @param jdbc the application's database
   * @param pageTime how long one page takes to render ({@code reports.page-time})
   */
  public RenderReportHandler(JdbcTemplate jdbc, @Value("${reports.page-time:200ms}") Duration pageTime) {
    this.jdbc = jdbc;
    this.pageTime = pageTime;
  }

  @Override
  public String queue() {
    return "reports";
  }

  @Override
  public RenderedReport handle(RenderReport request, WorkContext context) throws InterruptedException {
    int first = context.lastCheckpointAsString().map(Integer::parseInt).orElse(0) + 1;
    for (int page = first; page <= request.pages(); page++) {
      try {
        Thread.sleep(pageTime.toMillis()); // rendering one page
      } catch (InterruptedException e) {
        if (context.isShutdownRequested()) { // the drain timeout ended: another worker resumes
          throw new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN, "report "
              + request.reportId() + " handed back before page " + page + ": the application is stopping", e);
        }
        throw e;
      }
      context.checkpoint(Integer.toString(page)); // refused once the lease is lost or cancelled
      context.beat();
      if (context.isShutdownRequested() && page < request.pages()) {
        // the application is stopping (after tether.worker.drain-timeout): hand the report back
        // now, uncharged; the next worker resumes after this page
        throw new WorkStoppedException(WorkStoppedException.Reason.SHUTDOWN, "report "
            + request.reportId() + " handed back after page " + page + ": the application is stopping");
      }
    }
    jdbc.update("UPDATE reports SET status = 'rendered' WHERE id = ?", request.reportId());
    return new RenderedReport(request.reportId(), request.pages());
  }
}
