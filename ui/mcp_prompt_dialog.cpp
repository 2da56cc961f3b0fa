// The MCP prompt picker (see mcp_prompt_dialog.h).
#include "mcp_prompt_dialog.h"

#include "services/mcp_host.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {
constexpr int kIndexRole = Qt::UserRole;
} // namespace

McpPromptDialog::McpPromptDialog(app::McpHost* host, QWidget* parent) : QDialog(parent), m_host(host) {
    setWindowTitle(tr("Insert a prompt from MCP servers"));
    resize(560, 460);
    auto* layout = new QVBoxLayout(this);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("mcpPrompts"));
    layout->addWidget(m_list, 1);
    m_description = new QLabel(this);
    m_description->setWordWrap(true);
    layout->addWidget(m_description);
    m_form = new QFormLayout;
    layout->addLayout(m_form);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Insert"));
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &McpPromptDialog::insertChosen);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::currentRowChanged, this, &McpPromptDialog::showChosen);

    for (const app::McpServerConfig& s : m_host->servers()) {
        app::McpClient* client = m_host->client(s.name);
        if (!client || client->state() != app::McpClient::State::Ready || !client->offersPrompts()) continue;
        ++m_listing;
        const quint64 ticket = client->listPrompts();
        connect(client, &app::McpClient::promptsListed, this, [this, client, ticket](quint64 t, const QList<app::McpPrompt>& prompts) {
            if (t == ticket) listed(client, prompts);
        });
        connect(client, &app::McpClient::promptFailed, this, [this, client, ticket](quint64 t, const QString& why) {
            if (t != ticket) return;
            m_problems << tr("%1: %2").arg(client->config().name, why);
            listed(client, {});
        });
    }
    m_status->setText(m_listing > 0 ? tr("Asking the servers for their prompts…")
                                    : tr("No running MCP server offers prompts (Tools › MCP servers… starts them)."));
    updateButtons();
}

QLineEdit* McpPromptDialog::argumentField(const QString& name) const {
    for (QLineEdit* f : m_fields)
        if (f->objectName() == QStringLiteral("arg:") + name) return f;
    return nullptr;
}

QString McpPromptDialog::statusText() const { return m_status->text(); }

void McpPromptDialog::listed(app::McpClient* client, const QList<app::McpPrompt>& prompts) {
    for (const app::McpPrompt& p : prompts) {
        const QString name = p.title.isEmpty() ? p.name : p.title;
        auto* item = new QListWidgetItem(QStringLiteral("%1 · %2").arg(client->config().name, name), m_list);
        item->setToolTip(p.description);
        item->setData(kIndexRole, int(m_prompts.size()));
        m_prompts.append({client->config().name, p});
    }
    if (--m_listing > 0) return;
    m_status->setText(m_list->count() > 0 ? tr("Choose a prompt; it goes into the message box for you to read and send.")
                                          : tr("The servers offer no prompts.") +
                                                (m_problems.isEmpty() ? QString() : QStringLiteral(" ") + m_problems.join(QStringLiteral("; "))));
    updateButtons();
}

// The chosen prompt's description and one field per argument (required ones marked).
void McpPromptDialog::showChosen() {
    for (QLineEdit* f : m_fields) {
        m_form->removeRow(f);
    }
    m_fields.clear();
    QListWidgetItem* item = m_list->currentItem();
    if (!item) return updateButtons();
    const app::McpPrompt& p = m_prompts.at(item->data(kIndexRole).toInt()).second;
    m_description->setText(p.description);
    for (const app::McpPromptArgument& a : p.arguments) {
        auto* field = new QLineEdit(this);
        field->setObjectName(QStringLiteral("arg:") + a.name);
        field->setPlaceholderText(a.required ? tr("required") : tr("optional"));
        field->setToolTip(a.description);
        connect(field, &QLineEdit::textChanged, this, &McpPromptDialog::updateButtons);
        m_form->addRow(a.required ? a.name + QStringLiteral(" *") : a.name, field);
        m_fields << field;
    }
    updateButtons();
}

void McpPromptDialog::updateButtons() {
    bool ok = m_list->currentItem() != nullptr && m_getting == 0;
    if (ok) {
        const app::McpPrompt& p = m_prompts.at(m_list->currentItem()->data(kIndexRole).toInt()).second;
        for (const app::McpPromptArgument& a : p.arguments)
            if (a.required && (!argumentField(a.name) || argumentField(a.name)->text().trimmed().isEmpty())) ok = false;
    }
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(ok);
}

void McpPromptDialog::insertChosen() {
    QListWidgetItem* item = m_list->currentItem();
    if (!item || m_getting != 0) return;
    const auto& [server, prompt] = m_prompts.at(item->data(kIndexRole).toInt());
    QJsonObject arguments;
    for (const app::McpPromptArgument& a : prompt.arguments) {
        const QString value = argumentField(a.name) ? argumentField(a.name)->text() : QString();
        if (a.required && value.trimmed().isEmpty()) {
            m_status->setText(tr("%1 needs a value").arg(a.name));
            return;
        }
        if (!value.isEmpty()) arguments.insert(a.name, value);
    }
    app::McpClient* client = m_host->client(server);
    if (!client) {
        m_status->setText(tr("%1: its server stopped").arg(server));
        return;
    }
    m_status->setText(tr("Filling in %1…").arg(prompt.name));
    m_getting = client->getPrompt(prompt.name, arguments);
    const QString name = server;
    connect(client, &app::McpClient::promptGot, this, [this, ticket = m_getting](quint64 t, const QString&, const QList<app::McpPromptMessage>& messages) {
        if (t != ticket || m_getting != ticket) return;
        m_getting = 0;
        QStringList parts;
        for (const app::McpPromptMessage& m : messages) parts << m.text;
        m_text = parts.join(QStringLiteral("\n\n"));
        accept();
    });
    connect(client, &app::McpClient::promptFailed, this, [this, name, ticket = m_getting](quint64 t, const QString& why) {
        if (t != ticket || m_getting != ticket) return;
        m_getting = 0; // said; the user may fix the arguments and try again
        m_status->setText(tr("%1: %2").arg(name, why));
        updateButtons();
    });
    updateButtons();
}

} // namespace hearth::ui
