package dev.tether.examples.boot;

/**
 * The result of rendering a report, kept with the item.
 *
 * @param reportId the report
 * @param pages the pages rendered
 */
public record RenderedReport(long reportId, int pages) {}
