// Test launcher for Apache Iceberg's REST catalog test server (RESTCatalogServlet
// over a JdbcCatalog), bound to 127.0.0.1 only. Arguments: <port> <warehouse dir> <sqlite file>.
// Prints "ready <port>" once listening. Files are local (file:// or plain paths).
// With -Dtether.rest.token=T every request but the token endpoint needs
// "Authorization: Bearer T" (or the token the endpoint issued for
// -Dtether.rest.client=ID, which it issues only for -Dtether.rest.secret).
// Faults for the client's retry tests: POST /tether-test/faults?applied503=N&refused409=N
// answers the next N table commits 503 after applying them, or 409 without;
// garbled=N answers the next N table loads with malformed metadata; expired=N
// refuses the token the endpoint issued on the next N requests (401), as if it expired.
// With -Dtether.rest.prefix=P the config answers {"overrides": {"prefix": P}} and
// only /v1/P/... is served (as /v1/...).
package org.apache.iceberg.rest;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.File;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Files;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class TetherRestServer {
  /** A FileIO on the local file system, for file:// and absolute locations. */
  public static class LocalIO implements FileIO {
    public LocalIO() {}

    private static File file(String location) {
      String p = location;
      if (p.startsWith("file://")) p = p.substring("file://".length());
      else if (p.startsWith("file:")) p = p.substring("file:".length());
      return new File(p);
    }

    @Override
    public InputFile newInputFile(String location) {
      return Files.localInput(file(location));
    }

    @Override
    public OutputFile newOutputFile(String location) {
      File f = file(location);
      File parent = f.getParentFile();
      if (parent != null) parent.mkdirs();
      return Files.localOutput(f);
    }

    @Override
    public void deleteFile(String location) {
      file(location).delete();
    }
  }

  /** The bearer-token gate (tests of the client's auth). */
  public static class Gate implements Filter {
    private final String token = System.getProperty("tether.rest.token");
    private final String client = System.getProperty("tether.rest.client");
    private final String secret = System.getProperty("tether.rest.secret");

    private static void refuse(HttpServletResponse r, String why) throws java.io.IOException {
      r.setStatus(401);
      r.setContentType("application/json");
      r.getWriter().write("{\"error\":{\"message\":\"" + why
          + "\",\"type\":\"NotAuthorizedException\",\"code\":401}}");
    }

    private static final AtomicInteger applied503 = new AtomicInteger();
    private static final AtomicInteger refused409 = new AtomicInteger();
    private static final AtomicInteger garbled = new AtomicInteger();
    private static final AtomicInteger expired = new AtomicInteger();

    private static boolean isCommit(HttpServletRequest h) {
      String[] parts = h.getRequestURI().split("/");
      // /v1/namespaces/<ns>/tables/<table>
      return "POST".equals(h.getMethod()) && parts.length == 6 && "tables".equals(parts[4]);
    }

    private static boolean take(AtomicInteger n) {
      return n.getAndUpdate(v -> v > 0 ? v - 1 : 0) > 0;
    }

    private static void answer(HttpServletResponse r, int status, String type, String msg)
        throws java.io.IOException {
      r.setStatus(status);
      r.setContentType("application/json");
      r.getWriter().write("{\"error\":{\"message\":\"" + msg + "\",\"type\":\"" + type
          + "\",\"code\":" + status + "}}");
    }

    /** Runs the request into a throwaway response (the commit applies; its answer is dropped). */
    private static void swallow(ServletRequest req, HttpServletResponse r, FilterChain chain)
        throws java.io.IOException, jakarta.servlet.ServletException {
      java.io.StringWriter sink = new java.io.StringWriter();
      java.io.PrintWriter pw = new java.io.PrintWriter(sink);
      jakarta.servlet.http.HttpServletResponseWrapper w =
          new jakarta.servlet.http.HttpServletResponseWrapper(r) {
            @Override public java.io.PrintWriter getWriter() { return pw; }
            @Override public void setStatus(int sc) {}
            @Override public void setContentType(String t) {}
            @Override public void setHeader(String n, String v) {}
            @Override public void addHeader(String n, String v) {}
          };
      chain.doFilter(req, w);
    }

    private final String prefix = System.getProperty("tether.rest.prefix");

    private void faults(ServletRequest req, ServletResponse resp, FilterChain chain)
        throws java.io.IOException, jakarta.servlet.ServletException {
      HttpServletRequest h = (HttpServletRequest) req;
      HttpServletResponse r = (HttpServletResponse) resp;
      if (prefix != null && !h.getRequestURI().startsWith("/tether-test/")) {
        String uri = h.getRequestURI();
        if (uri.equals("/v1/config")) {
          r.setContentType("application/json");
          r.getWriter().write("{\"defaults\":{},\"overrides\":{\"prefix\":\"" + prefix + "\"}}");
          return;
        }
        String mine = "/v1/" + prefix + "/";
        if (!uri.startsWith(mine)) {
          answer(r, 404, "NotFoundException", "no such route without the prefix: " + uri);
          return;
        }
        final String bare = "/v1/" + uri.substring(mine.length());
        h = new jakarta.servlet.http.HttpServletRequestWrapper(h) {
          @Override public String getRequestURI() { return bare; }
        };
        req = h;
      }
      if (h.getRequestURI().equals("/tether-test/faults")) {
        if (h.getParameter("applied503") != null)
          applied503.set(Integer.parseInt(h.getParameter("applied503")));
        if (h.getParameter("refused409") != null)
          refused409.set(Integer.parseInt(h.getParameter("refused409")));
        if (h.getParameter("expired") != null)
          expired.set(Integer.parseInt(h.getParameter("expired")));
        if (h.getParameter("garbled") != null)
          garbled.set(Integer.parseInt(h.getParameter("garbled")));
        r.setContentType("application/json");
        r.getWriter().write("{}");
        return;
      }
      String[] parts = h.getRequestURI().split("/");
      if ("GET".equals(h.getMethod()) && parts.length == 6 && "tables".equals(parts[4])
          && take(garbled)) {
        r.setContentType("application/json");
        r.getWriter().write("{\"metadata-location\":\"garbled.metadata.json\","
            + "\"metadata\":{\"format-version\":2,\"snapshots\":\"nope\"}}");
        return;
      }
      if (isCommit(h) && take(refused409)) {
        answer(r, 409, "CommitFailedException", "Requirement failed: injected conflict");
        return;
      }
      if (isCommit(h) && take(applied503)) {
        swallow(req, r, chain);
        answer(r, 503, "ServiceUnavailableException", "injected failure after the commit");
        return;
      }
      chain.doFilter(req, resp);
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
        throws java.io.IOException, jakarta.servlet.ServletException {
      HttpServletRequest h = (HttpServletRequest) req;
      HttpServletResponse r = (HttpServletResponse) resp;
      if (token == null || h.getRequestURI().startsWith("/tether-test/")) {
        faults(req, resp, chain);
        return;
      }
      if (h.getRequestURI().endsWith("/oauth/tokens")) {
        if (secret == null || !secret.equals(h.getParameter("client_secret"))
            || client == null || !client.equals(h.getParameter("client_id"))) {
          refuse(r, "bad client credentials");
          return;
        }
        // Answered here: the form parameters read above are gone from the body.
        r.setContentType("application/json");
        r.getWriter().write("{\"access_token\":\"client-credentials-token:sub=" + client
            + "\",\"token_type\":\"Bearer\",\"expires_in\":3600,"
            + "\"issued_token_type\":\"urn:ietf:params:oauth:token-type:access_token\"}");
        return;
      }
      String auth = h.getHeader("Authorization");
      String issued = "Bearer client-credentials-token:sub=" + client;
      if (auth == null || !(auth.equals("Bearer " + token) || (client != null && auth.equals(issued)))) {
        refuse(r, "not authorized");
        return;
      }
      if (auth.equals(issued) && take(expired)) {
        refuse(r, "token expired");
        return;
      }
      faults(req, resp, chain);
    }
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String warehouse = args[1];
    String db = args[2];
    Map<String, String> props = new HashMap<>();
    props.put("catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog");
    props.put("uri", "jdbc:sqlite:" + db);
    props.put("jdbc.schema-version", "V1");
    props.put("warehouse", warehouse);
    props.put("io-impl", LocalIO.class.getName());
    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, null);
    RESTCatalogServer.CatalogContext ctx = new RESTCatalogServer.CatalogContext(catalog, props);
    RESTCatalogAdapter adapter = new RESTServerCatalogAdapter(ctx);
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addFilter(new FilterHolder(new Gate()), "/*", EnumSet.of(DispatcherType.REQUEST));
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    Server server = new Server(new InetSocketAddress("127.0.0.1", port));
    server.setHandler(context);
    server.start();
    System.out.println("ready " + port);
    System.out.flush();
    server.join();
  }
}
