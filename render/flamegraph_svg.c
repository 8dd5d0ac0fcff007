/* flamegraph_svg.c — see flamegraph_svg.h.
 *
 * How: the samples (root first, from render/profile_stacks.h) are merged
 * into a call tree keyed by frame identity (native: the function; Python:
 * function and line, the same identity as the collapsed output); children
 * are ordered by name as flamegraph.pl does, so equal profiles give equal
 * pictures.  The tree is laid out in C into one <g class="frame"> per node
 * with its rect and (cut to fit) text, so the SVG shows the flame graph even
 * without scripting.  Each <g> also carries its position in samples
 * (data-x, data-w) and depth (data-d); the inline script only rescales
 * those for zooming and recolours for search.
 *
 * Nodes narrower than MIN_WIDTH_PX at full width are left out (as
 * flamegraph.pl's --minwidth), which bounds the file for huge profiles.
 * Names from the target are untrusted: XML-escaped, and invalid UTF-8 is
 * replaced so the document always parses. */
#include "render/flamegraph_svg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/frame_label.h"
#include "util/array.h"
#include "util/json_text.h"
#include "pprof/profile_file.h"
#include "render/profile_stacks.h"
#include "util/cleanup.h"
#include "util/hash.h"
#include "util/index_map.h"

#define SVG_WIDTH    1200
#define SVG_PAD      10
#define FRAME_HEIGHT 16
#define TOP_SPACE    56
#define BOTTOM_SPACE 34
#define FONT_SIZE    12
#define CHAR_WIDTH   7.0 /* average glyph width at FONT_SIZE, as flamegraph.pl */
#define MIN_WIDTH_PX 0.1
#define LABEL_MAX    1024
#define ROOT_NAME    "all"

struct fg_node {
        struct ps_frame frame;                      /* strings owned by the builder */
        uint32_t parent, first_child, next_sibling; /* UINT32_MAX: none */
        uint32_t depth;
        int64_t value;
        int64_t x; /* in samples, from the left */
};

struct flamegraph {
        struct fg_node *nodes;
        size_t n_nodes, nodes_capacity;
        struct index_map children; /* (parent, frame identity) -> node */
        uint32_t max_depth;
};

#define NONE          UINT32_MAX
#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

/* A child's identity under its parent: native frames by function,
 * Python frames by function and line (as the collapsed output). */
struct fg_key {
        const struct flamegraph *g;
        uint32_t parent;
        uint64_t function_id;
        int64_t line;
};

static int64_t fg_line(const struct ps_frame *frame)
{
        return frame->python ? frame->line : 0;
}

static uint64_t fg_key__hash(const struct fg_key *key)
{
        return hash__combine(hash__combine(hash__combine(5, key->parent), key->function_id),
                             (uint64_t)key->line);
}

static bool fg_key__equal(const void *context, uint32_t index)
{
        const struct fg_key *key = context;
        const struct fg_node *node = &key->g->nodes[index];

        return node->parent == key->parent && node->frame.function_id == key->function_id &&
               fg_line(&node->frame) == key->line;
}

static int64_t fg_new_node(struct flamegraph *g, uint32_t parent, const struct ps_frame *frame)
{
        if (ARRAY_RESERVE(g->nodes, g->nodes_capacity, g->n_nodes + 1) < 0)
                return -ENOMEM;
        struct fg_node *node = &g->nodes[g->n_nodes];
        *node = (struct fg_node){
            .frame = *frame, .parent = parent, .first_child = NONE, .next_sibling = NONE};
        if (parent != NONE) {
                node->depth = g->nodes[parent].depth + 1;
                node->next_sibling = g->nodes[parent].first_child;
                g->nodes[parent].first_child = (uint32_t)g->n_nodes;
                if (node->depth > g->max_depth)
                        g->max_depth = node->depth;
        }
        return (int64_t)g->n_nodes++;
}

/* The child of `parent` for `frame`, created on first sight; -ENOMEM. */
static int64_t fg_child(struct flamegraph *g, uint32_t parent, const struct ps_frame *frame)
{
        struct fg_key key = {g, parent, frame->function_id, fg_line(frame)};
        uint64_t hash = fg_key__hash(&key);
        uint32_t found = index_map__find(&g->children, hash, fg_key__equal, &key);
        int64_t node;

        if (found != INDEX_MAP_NONE)
                return found;
        node = fg_new_node(g, parent, frame);
        if (node >= 0 && index_map__insert(&g->children, hash, (uint32_t)node) < 0)
                return -ENOMEM;
        return node;
}

static int fg_add(void *arg, const struct ps_sample *sample)
{
        struct flamegraph *g = arg;
        uint32_t node = 0;

        g->nodes[0].value += sample->value;
        for (size_t i = 0; i < sample->n_frames; i++) {
                int64_t child = fg_child(g, node, &sample->frames[i]);
                if (child < 0)
                        return (int)child;
                node = (uint32_t)child;
                g->nodes[node].value += sample->value;
        }
        return 0;
}

/* ------------------------------------------------------------ layout */

static int compare_labels(const struct fg_node *a, const struct fg_node *b)
{
        char la[LABEL_MAX], lb[LABEL_MAX];

        frame_label__format(&a->frame, la, sizeof(la));
        frame_label__format(&b->frame, lb, sizeof(lb));
        return strcmp(la, lb);
}

/* Sorts `parent`'s children by label (insertion into a new list: child
 * lists are short and this runs once per node). */
static void fg_sort_children(struct flamegraph *g, uint32_t parent)
{
        uint32_t sorted = NONE, child = g->nodes[parent].first_child;

        while (child != NONE) {
                uint32_t next = g->nodes[child].next_sibling, *link = &sorted;
                while (*link != NONE && compare_labels(&g->nodes[*link], &g->nodes[child]) <= 0)
                        link = &g->nodes[*link].next_sibling;
                g->nodes[child].next_sibling = *link;
                *link = child;
                child = next;
        }
        g->nodes[parent].first_child = sorted;
}

/* Nodes are created after their parent, so one pass in creation order
 * sorts every child list before its children are placed. */
static void fg_layout(struct flamegraph *g)
{
        for (size_t n = 0; n < g->n_nodes; n++) {
                int64_t x = g->nodes[n].x;
                fg_sort_children(g, (uint32_t)n);
                for (uint32_t c = g->nodes[n].first_child; c != NONE;
                     c = g->nodes[c].next_sibling) {
                        g->nodes[c].x = x;
                        x += g->nodes[c].value;
                }
        }
}

/* ------------------------------------------------------------ output */

static void xml_text(FILE *out, const char *text)
{
        const unsigned char *s = (const unsigned char *)text;

        while (*s) {
                size_t n = json_text__utf8_length(s);
                if (n == 0) {
                        fputc('?', out);
                        s++;
                        continue;
                }
                switch (*s) {
                case '&':
                        fputs("&amp;", out);
                        break;
                case '<':
                        fputs("&lt;", out);
                        break;
                case '>':
                        fputs("&gt;", out);
                        break;
                case '"':
                        fputs("&quot;", out);
                        break;
                case '\'':
                        fputs("&apos;", out);
                        break;
                default:
                        if (*s < 0x20)
                                fputc(' ', out);
                        else
                                fwrite(s, 1, n, out);
                }
                s += n;
        }
}

/* flamegraph.pl's palettes: warm for native code, blue-green for Python,
 * the shade picked from the name so a function keeps its colour. */
static void frame_colour(const struct fg_node *node, char *out, size_t size)
{
        unsigned hash = 5381;

        for (const char *c = node->frame.function; *c; c++)
                hash = hash * 33 + (unsigned char)*c;
        unsigned v1 = hash % 100, v2 = (hash / 100) % 100, v3 = (hash / 10000) % 100;
        if (node->depth == 0)
                snprintf(out, size, "rgb(200,200,200)");
        else if (node->frame.python)
                snprintf(out, size, "rgb(%u,%u,%u)", 50 + v1 * 60 / 100, 150 + v2 * 60 / 100,
                         200 + v3 * 55 / 100);
        else
                snprintf(out, size, "rgb(%u,%u,%u)", 205 + v1 * 50 / 100, v2 * 230 / 100,
                         v3 * 55 / 100);
}

/* The label cut to `width_px`, with ".." when cut; "" when nothing fits. */
static void fit_label(const char *label, double width_px, char *out, size_t size)
{
        size_t fits = width_px > 6 ? (size_t)((width_px - 6) / CHAR_WIDTH) : 0;
        size_t len = strlen(label);

        if (fits < 3) {
                out[0] = '\0';
        } else if (len <= fits) {
                snprintf(out, size, "%s", label);
        } else {
                size_t keep = fits - 2 < size - 3 ? fits - 2 : size - 3;
                /* Never cut inside a UTF-8 sequence. */
                while (keep > 0 && ((unsigned char)label[keep] & 0xc0) == 0x80)
                        keep--;
                snprintf(out, size, "%.*s..", (int)keep, label);
        }
}

struct svg_geometry {
        double scale; /* px per sample */
        int height;
        int64_t total;
};

static void print_node(const struct flamegraph *g, const struct fg_node *node,
                       const struct svg_geometry *geo, FILE *out)
{
        char label[LABEL_MAX], shown[LABEL_MAX], colour[32];
        double x = SVG_PAD + (double)node->x * geo->scale, w = (double)node->value * geo->scale;
        int y = geo->height - BOTTOM_SPACE - (int)(node->depth + 1) * FRAME_HEIGHT;
        double pct = geo->total ? 100.0 * (double)node->value / (double)geo->total : 0;

        if (node->depth == 0)
                snprintf(label, sizeof(label), ROOT_NAME);
        else
                frame_label__format(&node->frame, label, sizeof(label));
        frame_colour(node, colour, sizeof(colour));
        fit_label(label, w, shown, sizeof(shown));
        fprintf(out,
                "<g class=\"frame %s\" data-x=\"%lld\" data-w=\"%lld\" data-d=\"%u\" data-name=\"",
                node->depth == 0     ? "root"
                : node->frame.python ? "py"
                                     : "native",
                (long long)node->x, (long long)node->value, node->depth);
        xml_text(out, label);
        fputs("\" data-file=\"", out);
        xml_text(out, node->frame.file);
        if (node->frame.line > 0)
                fprintf(out, ":%lld", (long long)node->frame.line);
        fputs("\"><title>", out);
        xml_text(out, label);
        fprintf(out, " (%.1f ms, %.2f%%)</title>", (double)node->value / 1e6, pct);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
                "<text x=\"%.1f\" y=\"%d\">",
                x, y, w, FRAME_HEIGHT - 1, colour, x + 3, y + FRAME_HEIGHT - 4);
        xml_text(out, shown);
        fputs("</text></g>\n", out);
        (void)g;
}

/* The script: zoom, search, hover details.  No data from the target is in
 * it; it reads the data-* attributes. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "const W=" STRINGIFY(SVG_WIDTH) ",PAD=" STRINGIFY(
        SVG_PAD) ",CW=7.0;\n"
                 "let frames=[],details,unzoom,matched,total=1,zoomed=null;\n"
                 "function init(){\n"
                 "  frames=Array.from(document.querySelectorAll('g.frame'));\n"
                 "  details=document.getElementById('details');\n"
                 "  unzoom=document.getElementById('unzoom');\n"
                 "  matched=document.getElementById('matched');\n"
                 "  const root=document.querySelector('g.root');\n"
                 "  if(root)total=+root.dataset.w||1;\n"
                 "  for(const g of frames){\n"
                 "    g.addEventListener('mouseover',()=>showDetails(g));\n"
                 "    g.addEventListener('mouseout',()=>{details.textContent=' ';});\n"
                 "    g.addEventListener('click',()=>zoom(g));\n"
                 "  }\n"
                 "  unzoom.addEventListener('click',()=>zoom(root));\n"
                 "  const box=document.getElementById('searchbox');\n"
                 "  if(box)box.addEventListener('input',()=>search(box.value));\n"
                 "}\n"
                 "function pct(v){return (100*v/total).toFixed(2)+'%';}\n"
                 "function showDetails(g){\n"
                 "  const f=g.dataset.file;\n"
                 "  details.textContent=g.dataset.name+(f?' \\u2014 '+f:'')+' \\u2014 "
                 "'+(g.dataset.w/1e6).toFixed(1)+' ms ('+pct(+g.dataset.w)+')';\n"
                 "}\n"
                 "function fit(g,w){\n"
                 "  const t=g.querySelector('text'),n=g.dataset.name,fits=Math.floor((w-6)/CW);\n"
                 "  t.textContent=fits<3?'':n.length<=fits?n:n.slice(0,fits-2)+'..';\n"
                 "}\n"
                 "function place(g,x,w){\n"
                 "  const r=g.querySelector('rect'),t=g.querySelector('text');\n"
                 "  r.setAttribute('x',x.toFixed(1));r.setAttribute('width',w.toFixed(1));\n"
                 "  t.setAttribute('x',(x+3).toFixed(1));fit(g,w);\n"
                 "}\n"
                 "function zoom(target){\n"
                 "  const "
                 "X=+target.dataset.x,Wd=+target.dataset.w,D=+target.dataset.d,s=(W-2*PAD)/Wd;\n"
                 "  zoomed=D===0?null:target;\n"
                 "  for(const g of frames){\n"
                 "    const x=+g.dataset.x,w=+g.dataset.w,d=+g.dataset.d;\n"
                 "    let show=false;\n"
                 "    g.classList.remove('parent');\n"
                 "    "
                 "if(d<D&&x<=X&&x+w>=X+Wd){show=true;place(g,PAD,W-2*PAD);g.classList.add('parent')"
                 ";}\n"
                 "    else if(d>=D&&x>=X&&x+w<=X+Wd){show=true;place(g,PAD+(x-X)*s,w*s);}\n"
                 "    g.classList.toggle('hide',!show||(d>=D&&w*s<0.1));\n"
                 "  }\n"
                 "  unzoom.classList.toggle('hide',zoomed===null);\n"
                 "  document.documentElement.dataset.zoomed=zoomed?zoomed.dataset.name:'';\n"
                 "}\n"
                 "function search(term){\n"
                 "  let re=null;\n"
                 "  if(term){try{re=new RegExp(term,'i');}catch(e){re=null;}}\n"
                 "  let spans=[];\n"
                 "  for(const g of frames){\n"
                 "    const hit=!!re&&!g.classList.contains('root')&&re.test(g.dataset.name);\n"
                 "    g.classList.toggle('match',hit);\n"
                 "    if(hit)spans.push([+g.dataset.x,+g.dataset.x+ +g.dataset.w]);\n"
                 "  }\n"
                 "  spans.sort((a,b)=>a[0]-b[0]);\n"
                 "  let sum=0,end=-1;\n"
                 "  for(const [a,b] of spans){if(a>=end){sum+=b-a;end=b;}else "
                 "if(b>end){sum+=b-end;end=b;}}\n"
                 "  matched.textContent=re?'Matched: '+pct(sum):'';\n"
                 "}\n"
                 "window.addEventListener('load',init);\n"
                 "]]></script>\n";

static const char svg_style[] =
    "<style>\n"
    "text{font-family:Verdana,'DejaVu Sans',sans-serif;font-size:12px;fill:#000}\n"
    "g.frame{cursor:pointer}\n"
    "g.frame text{pointer-events:none}\n"
    "g.frame:hover rect{stroke:#000;stroke-width:0.5}\n"
    "g.match rect{fill:rgb(230,0,230)!important}\n"
    "g.parent rect{opacity:0.6}\n"
    ".hide{display:none}\n"
    "#title{font-size:17px;text-anchor:middle}\n"
    "#unzoom{cursor:pointer}\n"
    "</style>\n";

static void print_header(const struct svg_geometry *geo, FILE *out)
{
        fprintf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "xmlns=\"http://www.w3.org/2000/svg\">\n",
                SVG_WIDTH, geo->height, SVG_WIDTH, geo->height);
        fputs(svg_style, out);
        fputs(svg_script, out);
        fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f0\"/>\n",
                SVG_WIDTH, geo->height);
        fprintf(out,
                "<text id=\"title\" x=\"%d\" y=\"22\">splunk-profd flame graph (%.1f ms)"
                "</text>\n",
                SVG_WIDTH / 2, (double)geo->total / 1e6);
        fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"44\">Reset zoom</text>\n",
                SVG_PAD);
        /* The search box: an HTML input in a foreignObject (any browser). */
        fprintf(out,
                "<foreignObject x=\"%d\" y=\"28\" width=\"260\" height=\"24\">"
                "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"searchbox\" type=\"search\" "
                "placeholder=\"Search (regex)\" style=\"width:250px;font-size:12px\"/>"
                "</foreignObject>\n",
                SVG_WIDTH - SVG_PAD - 260);
        fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
                SVG_WIDTH - SVG_PAD, geo->height - 12);
        fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_PAD,
                geo->height - 12);
}

static int fg_render(const struct flamegraph *g, char **text, size_t *size)
{
        _cleanup_fclose_ FILE *out = open_memstream(text, size);
        struct svg_geometry geo = {.total = g->nodes[0].value};

        if (!out)
                return -ENOMEM;
        geo.scale = (double)(SVG_WIDTH - 2 * SVG_PAD) / (double)(geo.total ? geo.total : 1);
        geo.height = TOP_SPACE + BOTTOM_SPACE + (int)(g->max_depth + 1) * FRAME_HEIGHT;
        print_header(&geo, out);
        fputs("<g id=\"frames\">\n", out);
        for (size_t n = 0; n < g->n_nodes; n++)
                if (n == 0 || (double)g->nodes[n].value * geo.scale >= MIN_WIDTH_PX)
                        print_node(g, &g->nodes[n], &geo, out);
        fputs("</g>\n</svg>\n", out);
        return fclose(take_ptr(out)) == 0 ? 0 : -ENOMEM;
}

int flamegraph_svg__write(const struct profile_builder *builder, const char *path)
{
        struct flamegraph g = {0};
        struct ps_frame root = {.function = ROOT_NAME, .file = ""};
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = fg_new_node(&g, NONE, &root) < 0 ? -ENOMEM : 0;

        if (r == 0)
                r = profile_stacks__each(builder, fg_add, &g);
        if (r == 0) {
                fg_layout(&g);
                r = fg_render(&g, &text, &size);
        }
        if (r == 0)
                r = profile_file__write_bytes(path, (const uint8_t *)text, size);
        free(g.nodes);
        index_map__free(&g.children);
        return r;
}
