#include "lower.hpp"

#include "diag.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace tinyk {

namespace {

using ir::opcode;

class lowerer {
public:
    lowerer(ast::program const& prog, int index) : prog_(prog), k_(prog.kernels[static_cast<std::size_t>(index)]) {
        res_.fn = std::make_unique<ir::function>();
        fn_ = res_.fn.get();
        fn_->name = k_.name;
        fn_->kernel_index = index;
        fn_->nparams = static_cast<int>(k_.params.size());
        fn_->first_line = k_.pos.line;
    }

    lowering_result run() {
        cur_ = fn_->new_block();
        for (std::size_t p = 0; p < k_.params.size(); ++p) {
            auto i = ir::make(opcode::param, f64_type(), {}, k_.param_pos[p].line);
            i->index = static_cast<int>(p);
            env_.push_back({k_.params[p], cur_->append(std::move(i))});
        }
        lower_body(k_.body);
        if (cur_) throw internal_error("kernel '" + k_.name + "' falls off its end after checking");
        ir::remove_unreachable_blocks(*fn_);
        ir::remove_trivial_phis(*fn_);
        return std::move(res_);
    }

private:
    struct binding {
        std::string name;
        ir::instr* value;
    };
    using env_t = std::vector<binding>; // in order of first definition

    ir::instr* emit(opcode op, std::vector<ir::instr*> args, int line) {
        return cur_->append(ir::make(op, op == opcode::assert_ ? void_type() : f64_type(), std::move(args), line));
    }
    ir::instr* constant(double v, int line) {
        auto i = ir::make(opcode::constant, f64_type(), {}, line);
        i->imm = v;
        return cur_->append(std::move(i));
    }
    void branch(ir::block* to) {
        auto i = ir::make(opcode::br, void_type(), {}, last_line_);
        i->succs = {to};
        cur_->append(std::move(i));
        to->preds.push_back(cur_);
    }
    void cond_branch(ir::instr* c, ir::block* t, ir::block* f, int line) {
        auto i = ir::make(opcode::cond_br, void_type(), {c}, line);
        i->succs = {t, f};
        cur_->append(std::move(i));
        t->preds.push_back(cur_);
        f->preds.push_back(cur_);
    }

    binding* find(std::string const& name) {
        for (auto it = env_.rbegin(); it != env_.rend(); ++it)
            if (it->name == name) return &*it;
        return nullptr;
    }

    void lower_body(std::vector<ast::stmt_ptr> const& body) {
        std::size_t mark = env_.size();
        for (auto const& s : body) {
            if (!cur_) break; // after a return: unreachable, already checked
            lower_stmt(*s);
        }
        env_.resize(mark);
    }

    // Merges the variables [0, n) coming from several predecessors of `join` (in the
    // order of join->preds) into env_, with phis where they differ.
    void merge(ir::block* join, std::vector<env_t> const& incoming, std::size_t n, int line) {
        env_ = incoming.front();
        env_.resize(n);
        for (std::size_t v = 0; v < n; ++v) {
            ir::instr* first = incoming.front()[v].value;
            bool same = std::all_of(incoming.begin(), incoming.end(),
                                    [&](env_t const& e) { return e[v].value == first; });
            if (same) continue;
            std::vector<ir::instr*> args;
            for (auto const& e : incoming) args.push_back(e[v].value);
            env_[v].value = join->insert_phi(ir::make(opcode::phi, f64_type(), std::move(args), line));
        }
    }

    static void assigned_names(std::vector<ast::stmt_ptr> const& body, std::vector<std::string>& out) {
        for (auto const& s : body) {
            if (s->kind == ast::stmt_kind::assign) out.push_back(s->name);
            assigned_names(s->body, out);
            assigned_names(s->else_body, out);
        }
    }

    void lower_stmt(ast::stmt const& s) {
        last_line_ = s.pos.line;
        switch (s.kind) {
        case ast::stmt_kind::var:
            env_.push_back({s.name, lower_expr(*s.value)});
            return;
        case ast::stmt_kind::assign: {
            ir::instr* v = lower_expr(*s.value);
            find(s.name)->value = v;
            return;
        }
        case ast::stmt_kind::return_: {
            ir::instr* v = lower_expr(*s.value);
            cur_->append(ir::make(opcode::ret, void_type(), {v}, s.pos.line));
            cur_ = nullptr;
            return;
        }
        case ast::stmt_kind::assert_: {
            ir::instr* v = lower_expr(*s.value);
            emit(opcode::assert_, {v}, s.pos.line);
            return;
        }
        case ast::stmt_kind::if_: {
            ir::instr* c = lower_expr(*s.value);
            ir::block* then_b = fn_->new_block();
            ir::block* else_b = fn_->new_block();
            cond_branch(c, then_b, else_b, s.pos.line);
            std::size_t n = env_.size();
            env_t before = env_;
            std::vector<std::pair<ir::block*, env_t>> ends;
            cur_ = then_b;
            lower_body(s.body);
            if (cur_) ends.push_back({cur_, env_});
            env_ = before;
            cur_ = else_b;
            lower_body(s.else_body);
            if (cur_) ends.push_back({cur_, env_});
            if (ends.empty()) {
                cur_ = nullptr;
                return;
            }
            ir::block* join = fn_->new_block();
            std::vector<env_t> incoming;
            for (auto& [b, e] : ends) {
                cur_ = b;
                branch(join);
                incoming.push_back(std::move(e));
            }
            cur_ = join;
            merge(join, incoming, n, s.pos.line);
            return;
        }
        case ast::stmt_kind::while_: {
            ir::block* header = fn_->new_block();
            branch(header);
            cur_ = header;
            // A phi for every outer variable the body assigns, in definition order.
            std::vector<std::string> names;
            assigned_names(s.body, names);
            std::size_t n = env_.size();
            std::vector<std::pair<std::size_t, ir::instr*>> phis;
            for (std::size_t v = 0; v < n; ++v) {
                if (std::find(names.begin(), names.end(), env_[v].name) == names.end()) continue;
                ir::instr* phi = header->append(
                    ir::make(opcode::phi, f64_type(), {env_[v].value}, s.pos.line));
                env_[v].value = phi;
                phis.push_back({v, phi});
            }
            ir::instr* c = lower_expr(*s.value);
            ir::block* body_b = fn_->new_block();
            ir::block* exit_b = fn_->new_block();
            cond_branch(c, body_b, exit_b, s.pos.line);
            env_t after_cond = env_;
            cur_ = body_b;
            lower_body(s.body);
            if (cur_) {
                last_line_ = s.pos.line;
                branch(header);
                for (auto& [v, phi] : phis) phi->args.push_back(env_[v].value);
            } // else: no back edge; the one-argument phis are removed as trivial
            env_ = std::move(after_cond);
            cur_ = exit_b;
            return;
        }
        }
    }

    ir::instr* lower_expr(ast::expr const& e) {
        int line = e.pos.line;
        switch (e.kind) {
        case ast::expr_kind::number:
            return constant(e.number, line);
        case ast::expr_kind::name: {
            if (e.ref == ast::name_ref::local || e.ref == ast::name_ref::param) {
                if (binding* b = find(e.name)) return b->value;
            }
            for (auto const& g : prog_.globals) {
                if (g.name != e.name) continue;
                res_.globals_read[g.name] = g.value;
                ir::instr* c = constant(g.value, line);
                c->sym = g.name;
                return c;
            }
            throw internal_error("unresolved name '" + e.name + "' after checking");
        }
        case ast::expr_kind::call: {
            std::vector<ir::instr*> args;
            for (auto const& a : e.args) args.push_back(lower_expr(*a));
            if (e.callee_kernel >= 0) {
                ir::instr* c = emit(opcode::call, std::move(args), line);
                c->callee = e.callee_kernel;
                c->sym = e.name;
                res_.callees.insert(e.callee_kernel);
                return c;
            }
            switch (e.callee_builtin) {
            case ast::builtin::sqrt: return emit(opcode::sqrt, std::move(args), line);
            case ast::builtin::abs: return emit(opcode::abs, std::move(args), line);
            case ast::builtin::floor: return emit(opcode::floor, std::move(args), line);
            case ast::builtin::min: return emit(opcode::min, std::move(args), line);
            case ast::builtin::max: return emit(opcode::max, std::move(args), line);
            case ast::builtin::none: break;
            }
            throw internal_error("unresolved call to '" + e.name + "' after checking");
        }
        case ast::expr_kind::unary: {
            ir::instr* a = lower_expr(*e.args[0]);
            return emit(e.op == ast::op_kind::neg ? opcode::neg : opcode::not_, {a}, line);
        }
        case ast::expr_kind::binary:
            if (e.op == ast::op_kind::and_ || e.op == ast::op_kind::or_) return lower_logical(e);
            {
                ir::instr* a = lower_expr(*e.args[0]);
                ir::instr* b = lower_expr(*e.args[1]);
                opcode op = opcode::add;
                switch (e.op) {
                case ast::op_kind::add: op = opcode::add; break;
                case ast::op_kind::sub: op = opcode::sub; break;
                case ast::op_kind::mul: op = opcode::mul; break;
                case ast::op_kind::div: op = opcode::div; break;
                case ast::op_kind::lt: op = opcode::lt; break;
                case ast::op_kind::le: op = opcode::le; break;
                case ast::op_kind::gt: op = opcode::gt; break;
                case ast::op_kind::ge: op = opcode::ge; break;
                case ast::op_kind::eq: op = opcode::eq; break;
                case ast::op_kind::ne: op = opcode::ne; break;
                default: throw internal_error("unhandled binary operator");
                }
                return emit(op, {a, b}, line);
            }
        }
        throw internal_error("unhandled expression");
    }

    // a && b: b is evaluated only when a is true; the result is 1.0 or 0.0.
    ir::instr* lower_logical(ast::expr const& e) {
        bool is_and = e.op == ast::op_kind::and_;
        int line = e.pos.line;
        ir::instr* a = lower_expr(*e.args[0]);
        ir::instr* shortcut = constant(is_and ? 0.0 : 1.0, line);
        ir::block* rhs = fn_->new_block();
        ir::block* join = fn_->new_block();
        if (is_and) cond_branch(a, rhs, join, line);
        else cond_branch(a, join, rhs, line);
        cur_ = rhs;
        ir::instr* b = lower_expr(*e.args[1]);
        ir::instr* zero = constant(0.0, line);
        ir::instr* bb = emit(opcode::ne, {b, zero}, line);
        branch(join);
        cur_ = join;
        // join->preds is {the block that tested a, the block that computed b}.
        return join->insert_phi(ir::make(opcode::phi, f64_type(), {shortcut, bb}, line));
    }

    ast::program const& prog_;
    ast::kernel_decl const& k_;
    lowering_result res_;
    ir::function* fn_ = nullptr;
    ir::block* cur_ = nullptr;
    env_t env_;
    int last_line_ = 0;
};

} // namespace

lowering_result lower(ast::program const& prog, int index) { return lowerer(prog, index).run(); }

} // namespace tinyk
