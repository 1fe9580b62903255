package dev.tether.examples.boot;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An example Spring Boot application: {@code POST /reports} records a report request and sends
 * the work of rendering it to the {@code reports} queue in the same transaction; {@link
 * RenderReportHandler} renders it page by page, beating after each page.
 */
@SpringBootApplication
public class ReportsApplication {

  /** Creates the application. */
  public ReportsApplication() {}

  /**
   * Runs the application.
   *
   * @param args Spring Boot's arguments
   */
  public static void main(String[] args) {
    SpringApplication.run(ReportsApplication.class, args);
  }
}
