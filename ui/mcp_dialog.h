// The MCP servers dialog (Tools › MCP servers…): the servers the chat's model may use tools of,
// each a command (stdio) or a URL, imported from a Claude Desktop or LM Studio file or typed in;
// started and stopped here, with each server's state and, for a running one, its tools: a switch
// per tool and whether a call runs after asking, always, or never.
#pragma once

#include "services/mcp_host.h"

#include <QDialog>

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QTableWidget;

namespace hearth::ui {

class McpDialog : public QDialog {
    Q_OBJECT
public:
    explicit McpDialog(app::McpHost* host, QWidget* parent = nullptr);

    // Fills the form as typing would (a command line, split as a shell would, or a URL) and
    // saves it; false with the reason in statusText().
    bool saveServer(const QString& name, const QString& commandLine, const QString& url = {}, bool disabled = false);
    bool removeServer(const QString& name);
    bool importFile(const QString& path);
    void startServer(const QString& name);
    void stopServer(const QString& name);

    QStringList serverNames() const;
    QString serverStateText(const QString& name) const;
    QString statusText() const;
    // The tools table of the selected server, changed through its widgets as a user would.
    int shownToolCount() const;
    QString shownToolName(int row) const;
    void setShownToolEnabled(int row, bool on);
    void setShownToolApproval(int row, app::McpApproval approval);

private:
    void reload();
    void showServer(const QString& name);
    void showTools();
    bool saveForm();
    QString selectedServer() const;

    app::McpHost* m_host;
    QListWidget* m_list = nullptr;
    QLineEdit* m_name = nullptr;
    QLineEdit* m_command = nullptr;
    QLineEdit* m_url = nullptr;
    QCheckBox* m_disabled = nullptr;
    QLabel* m_state = nullptr;
    QLabel* m_status = nullptr;
    QTableWidget* m_tools = nullptr;
    bool m_filling = false; // the tools table is being filled: its signals are not the user's
};

} // namespace hearth::ui
