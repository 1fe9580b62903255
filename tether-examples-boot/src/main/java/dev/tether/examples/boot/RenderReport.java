package dev.tether.examples.boot;

/**
 * The work of rendering one report: a message body, stored as JSON.
 *
 * @param reportId the report's row in the application's table
 * @param title its title
 * @param pages how many pages to render
 */
public record RenderReport(long reportId, String title, int pages) {}
